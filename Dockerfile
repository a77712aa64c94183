# The baton image: `baton serve` (the reference job fx) for container
# platforms such as Cloud Run and Knative. A static binary (no cgo: the
# SQLite driver is pure Go) on distroless, run as a non-root user.
#
#   docker build -t baton .
#   docker run -p 8080:8080 -e BATON_AUTH_SECRET=… baton --backend postgres
#
# Arguments after the image name are serve's flags (`baton serve --help`).
# Build your own job's image the same way from your module's main.

FROM golang:1.26-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o /out/baton ./cmd/baton

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/baton /usr/local/bin/baton
# The embedded store's default file (var/baton.db) is under the home
# directory, which the non-root user may write.
WORKDIR /home/nonroot
USER nonroot:nonroot
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/baton", "serve"]
