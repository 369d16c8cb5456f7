package s3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/auth"
)

// SigV4 (AWS Signature Version 4) verification, for headers and presigned
// URLs: https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html.
// The tests check it against aws-sdk-go-v2's signer.

const (
	algorithm = "AWS4-HMAC-SHA256"
	// MaxSkew is how far a request's X-Amz-Date may be from this node's
	// clock (S3's own bound).
	MaxSkew = 15 * time.Minute
	// maxPresignExpiry is the longest a presigned URL may be valid (7 days).
	maxPresignExpiry = 7 * 24 * time.Hour

	unsignedPayload        = "UNSIGNED-PAYLOAD"
	streamingSigned        = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingUnsignedTrail = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	streamingSignedTrail   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	amzDateFormat          = "20060102T150405Z"
)

// Keys opens access keys: the principal a key acts for and its secret.
// auth.Authenticator is one.
type Keys interface {
	KeySecret(id string) (auth.Principal, string, error)
}

// signed is a request whose signature checked.
type signed struct {
	principal auth.Principal
	// payload is the x-amz-content-sha256 value: a hex SHA-256 to verify
	// the body against, UNSIGNED-PAYLOAD, or a STREAMING-* mode.
	payload string
	// For aws-chunked signed bodies: the seed signature, signing key,
	// timestamp and scope that chain the chunk signatures.
	seed, date, scope string
	key               []byte
}

// verifier checks SigV4 signatures.
type verifier struct {
	keys Keys
	now  func() time.Time
	// open accepts any key and secret without checking the signature
	// (--auth=false, decision 0060); the request's form and time are
	// still checked.
	open bool
}

// openPrincipal is who a signed request acts as with --auth=false.
var openPrincipal = auth.Principal{User: "anonymous", Via: auth.ViaAnonymous, Admin: true}

// credential is the parsed Credential= / X-Amz-Credential value.
type credential struct {
	keyID, day, region, service string
}

func (c credential) scope() string { return c.day + "/" + c.region + "/" + c.service + "/aws4_request" }

func parseCredential(s string) (credential, error) {
	p := strings.Split(s, "/")
	if len(p) != 5 || p[4] != "aws4_request" || p[0] == "" {
		return credential{}, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "the credential %q is not KEYID/DATE/REGION/SERVICE/aws4_request", s)
	}
	if p[3] != "s3" {
		return credential{}, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "the credential's service is %q; this is s3", p[3])
	}
	return credential{keyID: p[0], day: p[1], region: p[2], service: p[3]}, nil
}

// authenticated reports whether r carries a SigV4 signature (in its
// Authorization header or its query).
// Signed reports whether r is signed with SigV4, in its Authorization
// header or as a presigned URL: a request no other API of a node makes,
// so the node's client port may hand it to this one.
func Signed(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Authorization"), algorithm+" ") || r.URL.Query().Get("X-Amz-Algorithm") == algorithm
}

func authenticated(r *http.Request) bool {
	q := r.URL.Query()
	return r.Header.Get("Authorization") != "" || q.Has("X-Amz-Signature") || q.Has("Signature")
}

// verify checks r's signature and returns who signed it.
func (v *verifier) verify(r *http.Request) (*signed, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		return v.verifyHeader(r, h)
	}
	return v.verifyQuery(r)
}

func (v *verifier) verifyHeader(r *http.Request, h string) (*signed, error) {
	rest, ok := strings.CutPrefix(h, algorithm+" ")
	if strings.HasPrefix(h, "AWS ") {
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "this request is signed with Signature Version 2, which this S3 API does not accept: sign with SigV4 (AWS4-HMAC-SHA256)")
	}
	if !ok {
		return nil, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "only %s signatures are accepted (SigV4); the Authorization header's scheme is %s", algorithm, schemeOf(h))
	}
	fields := map[string]string{}
	for f := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return nil, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "malformed Authorization field %q", f)
		}
		fields[k] = val
	}
	cred, err := parseCredential(fields["Credential"])
	if err != nil {
		return nil, err
	}
	if fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return nil, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "the Authorization header needs Credential, SignedHeaders and Signature")
	}
	date := r.Header.Get("X-Amz-Date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	t, err := time.Parse(amzDateFormat, date)
	if err != nil {
		return nil, errorf(http.StatusForbidden, CodeAccessDenied, "X-Amz-Date %q is not a date of the form %s", date, amzDateFormat)
	}
	if err := v.checkTime(t, cred); err != nil {
		return nil, err
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "missing x-amz-content-sha256: sign the payload's SHA-256 or UNSIGNED-PAYLOAD")
	}
	if err := checkPayloadMode(payload); err != nil {
		return nil, err
	}
	canon := canonicalRequest(r, r.URL.Query(), strings.Split(fields["SignedHeaders"], ";"), payload)
	s, err := v.check(cred, date, canon, fields["Signature"])
	if err != nil {
		return nil, err
	}
	s.payload = payload
	return s, nil
}

func (v *verifier) verifyQuery(r *http.Request) (*signed, error) {
	q := r.URL.Query()
	if q.Has("Signature") && q.Has("AWSAccessKeyId") {
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "this URL is signed with Signature Version 2, which this S3 API does not accept: presign with SigV4 (boto3: Config(signature_version=\"s3v4\"))")
	}
	if q.Get("X-Amz-Algorithm") != algorithm {
		return nil, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "X-Amz-Algorithm must be %s", algorithm)
	}
	cred, err := parseCredential(q.Get("X-Amz-Credential"))
	if err != nil {
		return nil, err
	}
	date := q.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, date)
	if err != nil {
		return nil, errorf(http.StatusForbidden, CodeAccessDenied, "X-Amz-Date %q is not a date of the form %s", date, amzDateFormat)
	}
	secs, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxPresignExpiry {
		return nil, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "X-Amz-Expires must be 1 to %d seconds", int(maxPresignExpiry.Seconds()))
	}
	now := v.now()
	if t.Sub(now) > MaxSkew {
		return nil, errorf(http.StatusForbidden, CodeRequestTimeTooSkewed, "the URL is signed at %s, more than %s ahead of this node's clock (%s)", t.Format(time.RFC3339), MaxSkew, now.UTC().Format(time.RFC3339))
	}
	if now.After(t.Add(time.Duration(secs) * time.Second)) {
		return nil, errorf(http.StatusForbidden, CodeAccessDenied, "Request has expired: the URL was valid until %s", t.Add(time.Duration(secs)*time.Second).Format(time.RFC3339))
	}
	if t.Format("20060102") != cred.day {
		return nil, errorf(http.StatusBadRequest, CodeAuthorizationHeader, "the credential's date %s is not X-Amz-Date's day", cred.day)
	}
	payload := q.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = unsignedPayload
	}
	sig := q.Get("X-Amz-Signature")
	q.Del("X-Amz-Signature")
	canon := canonicalRequest(r, q, strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), payload)
	s, err := v.check(cred, date, canon, sig)
	if err != nil {
		return nil, err
	}
	s.payload = payload
	return s, nil
}

// checkTime bounds a header-signed request's clock skew.
func (v *verifier) checkTime(t time.Time, cred credential) error {
	now := v.now()
	if d := t.Sub(now); d > MaxSkew || d < -MaxSkew {
		return errorf(http.StatusForbidden, CodeRequestTimeTooSkewed,
			"The difference between the request time (%s) and this node's time (%s) is more than %s: set the client's clock", t.Format(time.RFC3339), now.UTC().Format(time.RFC3339), MaxSkew)
	}
	if t.Format("20060102") != cred.day {
		return errorf(http.StatusBadRequest, CodeAuthorizationHeader, "the credential's date %s is not X-Amz-Date's day", cred.day)
	}
	return nil
}

// check opens the key, signs canon and compares with sig.
func (v *verifier) check(cred credential, date, canon, sig string) (*signed, error) {
	if v.open {
		// no key to sign with: an aws-chunked body's chunk signatures
		// go unchecked too (newBody)
		return &signed{principal: openPrincipal, date: date, scope: cred.scope()}, nil
	}
	p, secret, err := v.keys.KeySecret(cred.keyID)
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) || errors.Is(err, auth.ErrMalformed) {
			return nil, errorf(http.StatusForbidden, CodeInvalidAccessKeyID, "The AWS Access Key Id you provided does not exist in our records (mure key create makes one).")
		}
		return nil, errorf(http.StatusInternalServerError, CodeInternalError, "access key %s: %v", cred.keyID, err)
	}
	key := signingKey(secret, cred)
	scope := cred.scope()
	want := hex.EncodeToString(hmacSHA256(key, stringToSign(date, scope, canon)))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(sig))) {
		return nil, errorf(http.StatusForbidden, CodeSignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	}
	return &signed{principal: p, seed: want, date: date, scope: scope, key: key}, nil
}

func checkPayloadMode(p string) error {
	switch p {
	case unsignedPayload, streamingSigned, streamingUnsignedTrail:
		return nil
	case streamingSignedTrail:
		return errorf(http.StatusNotImplemented, CodeNotImplemented, "%s is not supported yet; sign the chunks without a trailer or send UNSIGNED-PAYLOAD", p)
	}
	if b, err := hex.DecodeString(p); err != nil || len(b) != sha256.Size {
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "x-amz-content-sha256 %q is neither a hex SHA-256 nor a known payload mode", p)
	}
	return nil
}

func stringToSign(date, scope, canon string) string {
	sum := sha256.Sum256([]byte(canon))
	return algorithm + "\n" + date + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

func signingKey(secret string, c credential) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), c.day)
	k = hmacSHA256(k, c.region)
	k = hmacSHA256(k, c.service)
	return hmacSHA256(k, "aws4_request")
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// canonicalRequest is SigV4's canonical form of r with the query q and
// the signed header names.
func canonicalRequest(r *http.Request, q url.Values, names []string, payload string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(uriEncode(r.URL.Path, false))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(q))
	b.WriteByte('\n')
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(headerValue(r, n))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(names, ";"))
	b.WriteByte('\n')
	b.WriteString(payload)
	return b.String()
}

// headerValue is a signed header's canonical value: net/http keeps Host
// and Content-Length out of r.Header.
func headerValue(r *http.Request, name string) string {
	switch name {
	case "host":
		return r.Host
	case "content-length":
		if r.ContentLength >= 0 && r.Header.Get("Content-Length") == "" {
			return strconv.FormatInt(r.ContentLength, 10)
		}
	case "transfer-encoding":
		return strings.Join(r.TransferEncoding, ",")
	}
	vals := r.Header.Values(name)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

func canonicalQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		vals := slices.Clone(q[k])
		slices.Sort(vals)
		for _, v := range vals {
			parts = append(parts, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	return strings.Join(parts, "&")
}

// uriEncode is SigV4's URI encoding: every byte but the unreserved
// characters (and '/' when not encodeSlash) as %XX, upper case.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// schemeOf names the scheme of an Authorization value for an error
// message, which is also logged: the first word when it reads as a scheme
// name (Bearer, Basic), never any of a credential, such as a bare token.
func schemeOf(h string) string {
	w, _, ok := strings.Cut(h, " ")
	if !ok || len(w) > 16 || strings.ContainsFunc(w, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-')
	}) {
		return "not one (a bare credential?)"
	}
	return strconv.Quote(w)
}
