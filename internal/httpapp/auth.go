package httpapp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/batonhq/baton/internal/strictjson"
)

// Auth says how the handlers verify their caller. Exactly one way is
// chosen: an OIDC token (OIDCIssuer and OIDCAudience), a shared secret
// (Secret), or none (None, for a platform that verifies callers itself,
// such as Cloud Run without unauthenticated access). With none of them set
// the handlers serve loopback callers only, and Serve refuses to listen on
// an address that is not loopback.
type Auth struct {
	// OIDCIssuer is the token issuer (iss), such as
	// https://accounts.google.com for Cloud Scheduler and Pub/Sub push.
	OIDCIssuer string
	// OIDCAudience is the audience (aud) the tokens must carry: the
	// service's URL for Cloud Scheduler and Cloud Run.
	OIDCAudience string
	// OIDCJWKSURL is where the issuer's signing keys are; "" discovers it
	// from the issuer's /.well-known/openid-configuration at start.
	OIDCJWKSURL string
	// OIDCEmails, when set, are the callers accepted: the token's email
	// claim (verified) must be one of them. Without it any identity the
	// issuer signs for the audience is accepted; with Google as issuer
	// that is any service account of any project, so set it.
	OIDCEmails []string
	// Secret is a shared secret the caller sends as "Authorization:
	// Bearer <secret>", or in SecretHeader when set.
	Secret       string
	SecretHeader string
	// None serves every caller unverified.
	None    bool
	NowFunc func() time.Time // the token clock; nil: time.Now
}

// ErrUnauthenticated matches a request whose caller is not verified (401).
var ErrUnauthenticated = errors.New("caller not verified")

// ErrNoAuth matches the error of Serve (and Authenticator) when no way of
// verifying callers is configured for an address that is not loopback.
var ErrNoAuth = errors.New("no caller verification")

// Kind names the configured way: "oidc", "secret", "none" or "loopback".
func (a Auth) Kind() string {
	switch {
	case a.OIDCIssuer != "" || a.OIDCAudience != "":
		return "oidc"
	case a.Secret != "":
		return "secret"
	case a.None:
		return "none"
	}
	return "loopback"
}

// check reports a configuration that mixes or half-sets the ways.
func (a Auth) check() error {
	n := 0
	for _, set := range []bool{a.OIDCIssuer != "" || a.OIDCAudience != "" || a.OIDCJWKSURL != "" || len(a.OIDCEmails) > 0, a.Secret != "" || a.SecretHeader != "", a.None} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return errors.New("auth: choose one way of verifying callers: OIDC, a shared secret or none")
	case (a.OIDCIssuer != "" || a.OIDCJWKSURL != "" || len(a.OIDCEmails) > 0) && a.OIDCAudience == "":
		return errors.New("auth: OIDC needs an audience (the service's URL)")
	case a.OIDCAudience != "" && a.OIDCIssuer == "":
		return errors.New("auth: OIDC needs an issuer (https://accounts.google.com for Google-signed tokens)")
	case a.SecretHeader != "" && a.Secret == "":
		return fmt.Errorf("auth: secret header %s named but no secret set", strictjson.Quote(a.SecretHeader))
	case a.Secret != "" && len(a.Secret) < 16:
		return errors.New("auth: the shared secret is shorter than 16 bytes")
	}
	return nil
}

// Authenticator verifies callers as Auth says.
type Authenticator struct {
	kind     string
	verifier *oidc.IDTokenVerifier
	emails   []string
	secret   [32]byte // SHA-256 of the secret: compared in constant time whatever the length
	header   string
}

// NewAuthenticator checks a and prepares it (for OIDC without a JWKS URL,
// it reads the issuer's discovery document).
func NewAuthenticator(ctx context.Context, a Auth) (*Authenticator, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	au := &Authenticator{kind: a.Kind(), emails: a.OIDCEmails, header: a.SecretHeader}
	switch au.kind {
	case "oidc":
		cfg := &oidc.Config{ClientID: a.OIDCAudience, Now: a.NowFunc}
		if a.OIDCJWKSURL != "" {
			au.verifier = oidc.NewVerifier(a.OIDCIssuer, oidc.NewRemoteKeySet(context.WithoutCancel(ctx), a.OIDCJWKSURL), cfg)
			break
		}
		p, err := oidc.NewProvider(ctx, a.OIDCIssuer)
		if err != nil {
			return nil, fmt.Errorf("auth: OIDC discovery for issuer %s: %s (or set the JWKS URL)", a.OIDCIssuer, oneLine(err.Error()))
		}
		au.verifier = p.Verifier(cfg)
	case "secret":
		au.secret = sha256.Sum256([]byte(a.Secret))
	}
	return au, nil
}

// Kind names the way callers are verified.
func (au *Authenticator) Kind() string { return au.kind }

// Verify verifies r's caller; its error matches ErrUnauthenticated and
// says why, without echoing credentials.
func (au *Authenticator) Verify(r *http.Request) error {
	switch au.kind {
	case "none":
		return nil
	case "loopback":
		if isLoopbackRemote(r.RemoteAddr) {
			return nil
		}
		return fmt.Errorf("%w: no caller verification is configured, so only loopback callers are served (configure OIDC or a shared secret)", ErrUnauthenticated)
	case "secret":
		got, ok := au.presented(r)
		if !ok {
			return fmt.Errorf("%w: no secret in %s", ErrUnauthenticated, au.where())
		}
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], au.secret[:]) != 1 {
			return fmt.Errorf("%w: wrong secret in %s", ErrUnauthenticated, au.where())
		}
		return nil
	}
	raw, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return fmt.Errorf("%w: no bearer token in the Authorization header", ErrUnauthenticated)
	}
	tok, err := au.verifier.Verify(r.Context(), raw)
	if err != nil {
		return fmt.Errorf("%w: token refused: %s", ErrUnauthenticated, oneLine(err.Error()))
	}
	if len(au.emails) == 0 {
		return nil
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
	}
	if err := tok.Claims(&claims); err != nil {
		return fmt.Errorf("%w: token claims: %v", ErrUnauthenticated, err)
	}
	if !claims.EmailVerified || !slices.Contains(au.emails, claims.Email) {
		return fmt.Errorf("%w: caller %s is not one of the accepted callers", ErrUnauthenticated, strictjson.Quote(claims.Email))
	}
	return nil
}

func (au *Authenticator) presented(r *http.Request) (string, bool) {
	if au.header != "" {
		v := r.Header.Get(au.header)
		return v, v != ""
	}
	return bearer(r.Header.Get("Authorization"))
}

func (au *Authenticator) where() string {
	if au.header != "" {
		return "header " + au.header
	}
	return `the Authorization header ("Bearer <secret>")`
}

// bearer returns the credentials of an "Authorization: Bearer x" value.
func bearer(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

func isLoopbackRemote(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address (host:port) only takes
// loopback connections: 127.0.0.1, ::1 or localhost; an empty host (all
// interfaces) is not.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// CheckExposure refuses to serve addr without caller verification unless
// it is loopback.
func CheckExposure(addr string, a Auth) error {
	if a.Kind() != "loopback" || IsLoopbackAddr(addr) {
		return nil
	}
	return fmt.Errorf("%w: listening on %s, which is not loopback, needs caller verification: set an OIDC issuer and audience, a shared secret, or none when the platform verifies callers itself",
		ErrNoAuth, addr)
}

// CheckAuth reports a configuration of a that mixes or half-sets the ways
// of verifying callers, as NewAuthenticator would.
func CheckAuth(a Auth) error { return a.check() }
