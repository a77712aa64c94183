package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/ledger"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	Catalog *baton.Catalog
	// Backend is read for every page; the server writes nothing to it.
	Backend backend.Backend
	// Operator performs the actions and lists the dead-letter queue.
	// Required.
	Operator Operator
	// ReadOnly hides the actions and refuses them.
	ReadOnly bool
	// AccessToken, when set, is required of every request (see the package
	// doc). Without it only requests to a loopback host name are served.
	AccessToken string
	// Runs is how many runs a job's page lists, and the window of its
	// staleness chart; 0 means 20.
	Runs int
	// DeadLetters is how many dead letters the queue's page lists; 0
	// means 100.
	DeadLetters int
	// Refresh is how often a live page asks for its content again; 0
	// means 2s.
	Refresh time.Duration
	// TraceURL, when set, makes a run's trace id (ledger.Run.TraceID) a
	// link: the URL with {trace_id} replaced by the id, such as
	// "https://tracing.example/trace/{trace_id}". It must be an http or
	// https URL holding {trace_id}. Unset, the id shows as text.
	TraceURL string
	NowFunc  func() time.Time
	Logger   *slog.Logger
}

// Operator performs the dashboard's actions with the guards of the CLI
// (Actor does, with the calls of package ops) and answers what only the
// CLI knows how to compute.
type Operator interface {
	// Do performs a, which ParseAction returned; Outcome reports what
	// happened (a refusal included).
	Do(ctx context.Context, a Action) Outcome
	// DeadLetters lists up to max messages of the dead-letter queue with
	// each one's reason and what a redrive would do with it.
	DeadLetters(ctx context.Context, max int) ([]DeadLetter, error)
	// MissedTicks are the schedule's ticks among runs' span (runs newest
	// first) that have no run, newest first, with why.
	MissedTicks(j baton.Job, runs []ledger.Run, now time.Time) []MissedTick
}

// Outcome is what an action did.
type Outcome struct {
	// ExitStatus is as the CLI's: 0 done (or nothing to do), 1 refused or
	// failed, 2 bad input.
	ExitStatus int
	Output     string // what the action did, in the dashboard's words
}

// DeadLetter is one message of the dead-letter queue.
type DeadLetter struct {
	MessageID    string
	Key          string // the item's key, "" when the body is malformed
	Malformed    string // why the body is not an item message
	ItemState    string
	Attempts     int
	ReceiveCount int
	LastError    string // the reason the consumer attached, else the item's last failure
	SentAt       time.Time
	OnRedrive    string // what a redrive would do with it
}

// MissedTick is a tick of the schedule without a run.
type MissedTick struct {
	Tick   time.Time
	Reason string
}

// Server serves the dashboard. Create it with New.
type Server struct {
	o       Options
	key     []byte // signs session tokens
	pages   map[string]*template.Template
	handler http.Handler
}

// New returns a Server for o.
func New(o Options) (*Server, error) {
	switch {
	case o.Catalog == nil:
		return nil, errors.New("ui: no catalog")
	case o.Operator == nil:
		return nil, errors.New("ui: no operator")
	case o.Backend.Ledger == nil || o.Backend.Leases == nil:
		return nil, errors.New("ui: backend without a ledger or leases")
	}
	if err := CheckTraceURL(o.TraceURL); err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	if o.Runs <= 0 {
		o.Runs = 20
	}
	if o.DeadLetters <= 0 {
		o.DeadLetters = 100
	}
	if o.Refresh <= 0 {
		o.Refresh = 2 * time.Second
	}
	if o.NowFunc == nil {
		o.NowFunc = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, key: make([]byte, 32), pages: map[string]*template.Template{}}
	if _, err := rand.Read(s.key); err != nil {
		return nil, err
	}
	for _, name := range []string{"jobs", "job", "run", "lease", "dlq", "confirm", "outcome", "error"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.jobsPage)
	mux.HandleFunc("GET /jobs/{job}", s.jobPage)
	mux.HandleFunc("GET /jobs/{job}/lease", s.leasePage)
	mux.HandleFunc("GET /run", s.runPage)
	mux.HandleFunc("GET /jobs/{job}/submission", s.submissionPage)
	mux.HandleFunc("GET /dlq", s.dlqPage)
	mux.HandleFunc("GET /confirm", s.confirmPage)
	mux.HandleFunc("POST /act", s.act)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no page at %s", r.URL.Path))
	})
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusForbidden, errors.New("cross-origin request refused"))
	}))
	s.handler = s.guard(cop.Handler(mux))
	return s, nil
}

// ServeHTTP serves the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

const (
	sessionCookie = "baton_ui_session"
	accessCookie  = "baton_ui_access"
	partialHeader = "X-Baton-Partial"
)

// guard sets the security headers, checks access (the token, or a
// loopback Host) and makes sure the browser has a session.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if s.o.AccessToken == "" {
			if !loopbackHost(r.Host) {
				s.fail(w, r, http.StatusMisdirectedRequest, fmt.Errorf("host %q is not a loopback name: without an access token the dashboard serves localhost only", r.Host))
				return
			}
		} else if !s.authorized(w, r) {
			return
		}
		if c, err := r.Cookie(sessionCookie); err != nil || len(c.Value) != 64 {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				http.Error(w, "no randomness", http.StatusInternalServerError)
				return
			}
			c := &http.Cookie{Name: sessionCookie, Value: hex.EncodeToString(b), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode}
			http.SetCookie(w, c)
			r.AddCookie(c)
		}
		next.ServeHTTP(w, r)
	})
}

// authorized checks the access token: a Bearer header, the cookie, or
// ?token= on a GET (which sets the cookie and redirects without it, so
// the token leaves the address bar and the history).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenOK(tok) {
		return true
	}
	if c, err := r.Cookie(accessCookie); err == nil && s.tokenOK(c.Value) {
		return true
	}
	if q := r.URL.Query(); r.Method == http.MethodGet && q.Has("token") {
		if !s.tokenOK(q.Get("token")) {
			s.fail(w, r, http.StatusUnauthorized, errors.New("wrong access token"))
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: accessCookie, Value: q.Get("token"), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		q.Del("token")
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return false
	}
	s.fail(w, r, http.StatusUnauthorized, errors.New("this dashboard needs its access token: open it once with ?token=<token>, or send Authorization: Bearer <token>"))
	return false
}

func (s *Server) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.o.AccessToken)) == 1
}

// loopbackHost reports whether the Host header names this machine's
// loopback: localhost or a loopback address, with any port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// csrfToken is the token the forms of the session carry: an HMAC of the
// session cookie under the server's key.
func (s *Server) csrfToken(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(c.Value))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) csrfOK(r *http.Request, got string) bool {
	want := s.csrfToken(r)
	return want != "" && hmac.Equal([]byte(got), []byte(want))
}

// page is what every template receives.
type page struct {
	Title    string
	Nav      string // the navigation entry to highlight
	Token    string
	ReadOnly bool
	Live     bool
	Refresh  int64 // milliseconds
	Now      time.Time
	Body     any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Token, p.ReadOnly, p.Refresh = s.csrfToken(r), s.o.ReadOnly, s.o.Refresh.Milliseconds()
	if p.Now.IsZero() {
		p.Now = s.o.NowFunc().UTC()
	}
	root := "layout"
	if r.Header.Get(partialHeader) == "1" {
		root = "main-element"
	}
	var b strings.Builder
	if err := s.pages[name].ExecuteTemplate(&b, root, p); err != nil {
		s.o.Logger.ErrorContext(r.Context(), "render", "page", name, "error", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail renders an error page (escaped like any other).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	s.render(w, r, status, "error", page{Title: http.StatusText(status), Body: struct {
		Status int
		Error  string
	}{status, err.Error()}})
}

// TraceIDPlaceholder is what Options.TraceURL holds where the trace id
// goes.
const TraceIDPlaceholder = "{trace_id}"

// CheckTraceURL returns an error naming what is wrong with tmpl as
// Options.TraceURL ("" is none, and fine).
func CheckTraceURL(tmpl string) error {
	if tmpl == "" {
		return nil
	}
	if !strings.Contains(tmpl, TraceIDPlaceholder) {
		return fmt.Errorf("trace URL %q has no %s where the trace id goes", tmpl, TraceIDPlaceholder)
	}
	u, err := url.Parse(strings.ReplaceAll(tmpl, TraceIDPlaceholder, "0af7651916cd43dd8448eb211c80319c"))
	if err != nil {
		return fmt.Errorf("trace URL %q: %v", tmpl, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("trace URL %q is not an http or https URL with a host", tmpl)
	}
	return nil
}

// traceRef is a run's trace as a page shows it.
type traceRef struct {
	ID  string // the W3C trace id
	URL string // Options.TraceURL's link to it; "" when unset
}

// traceOf is run's trace, nil when its record has none.
func (s *Server) traceOf(run ledger.Run) *traceRef {
	if run.TraceID == "" {
		return nil
	}
	t := &traceRef{ID: run.TraceID}
	if s.o.TraceURL != "" {
		t.URL = strings.ReplaceAll(s.o.TraceURL, TraceIDPlaceholder, url.PathEscape(run.TraceID))
	}
	return t
}
