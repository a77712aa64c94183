package httpapp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/httpapp"
)

// issuer is a local OIDC issuer: a JWKS endpoint serving its public key
// and a signer for tokens.
type issuer struct {
	url string
	key *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	iss := &issuer{key: key}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss.url, "jwks_uri": iss.url + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"}})
		case "/jwks":
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	iss.url = srv.URL
	return iss
}

type claims struct {
	jwt.Claims
	Email         string `json:"email,omitempty"`
	EmailVerified bool   `json:"email_verified,omitempty"`
}

// token signs c with key (the issuer's unless another is given).
func (iss *issuer) token(t *testing.T, c claims, key *rsa.PrivateKey) string {
	t.Helper()
	if key == nil {
		key = iss.key
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	require.NoError(t, err)
	raw, err := jwt.Signed(sig).Claims(c).Serialize()
	require.NoError(t, err)
	return raw
}

func withBearer(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.RemoteAddr = "203.0.113.7:5555"
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

func TestOIDC(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	const aud = "https://baton-abc.a.run.app"
	valid := claims{Claims: jwt.Claims{Issuer: iss.url, Audience: jwt.Audience{aud}, Subject: "1234",
		IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), Expiry: jwt.NewNumericDate(now.Add(time.Hour))},
		Email: "scheduler@p.iam.gserviceaccount.com", EmailVerified: true}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	mod := func(f func(c *claims)) claims { c := valid; f(&c); return c }

	for _, discover := range []bool{false, true} {
		a := httpapp.Auth{OIDCIssuer: iss.url, OIDCAudience: aud, NowFunc: func() time.Time { return now }}
		if !discover {
			a.OIDCJWKSURL = iss.url + "/jwks"
		}
		au, err := httpapp.NewAuthenticator(context.Background(), a)
		require.NoError(t, err)
		require.Equal(t, "oidc", au.Kind())
		tests := []struct {
			name    string
			token   string
			wantErr string
		}{
			{"valid", iss.token(t, valid, nil), ""},
			{"wrong audience", iss.token(t, mod(func(c *claims) { c.Audience = jwt.Audience{"https://other.example"} }), nil), "audience"},
			{"expired", iss.token(t, mod(func(c *claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Second)) }), nil), "expired"},
			{"wrong issuer", iss.token(t, mod(func(c *claims) { c.Issuer = "https://accounts.google.com" }), nil), "issued by a different provider"},
			{"wrong key", iss.token(t, valid, other), "signature"},
			{"no token", "", "no bearer token"},
			{"garbage", "not.a.jwt", "token refused"},
		}
		for _, tc := range tests {
			err := au.Verify(withBearer(tc.token))
			if tc.wantErr == "" {
				require.NoError(t, err, "%s (discover %v)", tc.name, discover)
				continue
			}
			require.ErrorIs(t, err, httpapp.ErrUnauthenticated, tc.name)
			require.ErrorContains(t, err, tc.wantErr, tc.name)
			if len(tc.token) > 20 {
				require.NotContains(t, err.Error(), tc.token[20:], "the token is not echoed")
			}
		}
	}

	t.Run("emails", func(t *testing.T) {
		t.Parallel()
		au, err := httpapp.NewAuthenticator(context.Background(), httpapp.Auth{OIDCIssuer: iss.url, OIDCAudience: aud, OIDCJWKSURL: iss.url + "/jwks",
			OIDCEmails: []string{"scheduler@p.iam.gserviceaccount.com"}, NowFunc: func() time.Time { return now }})
		require.NoError(t, err)
		require.NoError(t, au.Verify(withBearer(iss.token(t, valid, nil))))
		err = au.Verify(withBearer(iss.token(t, mod(func(c *claims) { c.Email = "intruder@q.iam.gserviceaccount.com" }), nil)))
		require.ErrorContains(t, err, `caller "intruder@q.iam.gserviceaccount.com" is not one of the accepted callers`)
		err = au.Verify(withBearer(iss.token(t, mod(func(c *claims) { c.EmailVerified = false }), nil)))
		require.ErrorIs(t, err, httpapp.ErrUnauthenticated)
	})
}

func TestSharedSecret(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-s3cret-s3cret"
	bearerAuth, err := httpapp.NewAuthenticator(context.Background(), httpapp.Auth{Secret: secret})
	require.NoError(t, err)
	headerAuth, err := httpapp.NewAuthenticator(context.Background(), httpapp.Auth{Secret: secret, SecretHeader: "X-Baton-Secret"})
	require.NoError(t, err)
	require.NoError(t, bearerAuth.Verify(withBearer(secret)))
	require.ErrorContains(t, bearerAuth.Verify(withBearer(secret+"x")), "wrong secret")
	require.ErrorContains(t, bearerAuth.Verify(withBearer("")), "no secret in the Authorization header")
	r := withBearer("")
	r.Header.Set("X-Baton-Secret", secret)
	require.NoError(t, headerAuth.Verify(r))
	require.ErrorContains(t, headerAuth.Verify(withBearer(secret)), "no secret in header X-Baton-Secret")
}

func TestAuthConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a       httpapp.Auth
		wantErr string
	}{
		{httpapp.Auth{OIDCIssuer: "https://accounts.google.com"}, "OIDC needs an audience"},
		{httpapp.Auth{OIDCAudience: "https://x"}, "OIDC needs an issuer"},
		{httpapp.Auth{Secret: "short"}, "shorter than 16 bytes"},
		{httpapp.Auth{SecretHeader: "X-S"}, "no secret set"},
		{httpapp.Auth{Secret: "s3cret-s3cret-s3cret", None: true}, "choose one way"},
	} {
		_, err := httpapp.NewAuthenticator(context.Background(), tc.a)
		require.ErrorContains(t, err, tc.wantErr)
	}
	// Nothing configured: loopback callers only.
	au, err := httpapp.NewAuthenticator(context.Background(), httpapp.Auth{})
	require.NoError(t, err)
	require.ErrorContains(t, au.Verify(withBearer("")), "only loopback callers")
	r := withBearer("")
	r.RemoteAddr = "[::1]:4000"
	require.NoError(t, au.Verify(r))

	for addr, refused := range map[string]bool{":8080": true, "0.0.0.0:8080": true, "10.0.0.2:80": true, "127.0.0.1:8080": false, "[::1]:8080": false, "localhost:8080": false} {
		err := httpapp.CheckExposure(addr, httpapp.Auth{})
		if refused {
			require.ErrorIs(t, err, httpapp.ErrNoAuth, addr)
			require.ErrorContains(t, err, addr)
		} else {
			require.NoError(t, err, addr)
		}
		require.NoError(t, httpapp.CheckExposure(addr, httpapp.Auth{None: true}))
	}
}
