package cache

import (
	"net/url"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// hdr builds a header from name, value pairs.
func hdr(kv ...string) Header {
	h := Header{}
	for i := 0; i < len(kv); i += 2 {
		k := canonical(kv[i])
		h[k] = append(h[k], kv[i+1])
	}
	return h
}

func TestParseDirectives(t *testing.T) {
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	tests := []struct {
		name, value string
		maxAge      *time.Duration
		bad         bool
		check       func(Directives) bool
	}{
		{"plain", "max-age=60", ptr(sec(60)), false, nil},
		{"quoted", `max-age="60"`, ptr(sec(60)), false, nil},
		{"single quoted is bad", `max-age='60'`, nil, true, nil},
		{"leading zeros", "max-age=003600", ptr(sec(3600)), false, nil},
		{"fraction is bad", "max-age=3600.0", nil, true, nil},
		{"negative is bad", "max-age=-1", nil, true, nil},
		{"huge saturates", "max-age=99999999999999999999", ptr(maxDelta), false, nil},
		{"first wins", "max-age=1, max-age=1800", ptr(sec(1)), false, nil},
		{"quoted extension does not count", `extension="max-age=3600", max-age=1`, ptr(sec(1)), false, nil},
		{"case-insensitive", "MAX-AGE=5", ptr(sec(5)), false, nil},
		{"space before = ignored", "max-age =3600", nil, false, nil},
		{"private fields", `private="Set-Cookie, x-a", no-store`, nil, false, func(d Directives) bool {
			return d.Private && d.NoStore && len(d.PrivateFields) == 2 && d.PrivateFields[1] == "X-A"
		}},
		{"max-stale any", "max-stale", nil, false, func(d Directives) bool { return d.MaxStaleAny }},
		{"swr", "max-age=1, stale-while-revalidate=30", ptr(sec(1)), false, func(d Directives) bool {
			return *d.StaleWhileRevalidate == sec(30)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ParseDirectives(hdr("Cache-Control", tc.value), "Cache-Control")
			if (d.MaxAge == nil) != (tc.maxAge == nil) || (d.MaxAge != nil && *d.MaxAge != *tc.maxAge) {
				t.Errorf("max-age = %v, want %v", d.MaxAge, tc.maxAge)
			}
			if d.BadMaxAge != tc.bad {
				t.Errorf("bad max-age = %v, want %v", d.BadMaxAge, tc.bad)
			}
			if tc.check != nil && !tc.check(d) {
				t.Errorf("directives %+v", d)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestFreshness(t *testing.T) {
	date := FormatDate(t0)
	p := DefaultPolicy()
	tests := []struct {
		name     string
		h        Header
		life     time.Duration
		explicit bool
	}{
		{"max-age", hdr("Date", date, "Cache-Control", "max-age=100"), 100 * time.Second, true},
		{"s-maxage wins", hdr("Date", date, "Cache-Control", "max-age=100, s-maxage=10"), 10 * time.Second, true},
		{"expires", hdr("Date", date, "Expires", FormatDate(t0.Add(time.Hour))), time.Hour, true},
		{"expires in the past", hdr("Date", date, "Expires", FormatDate(t0.Add(-time.Hour))), 0, true},
		{"bad expires is stale", hdr("Date", date, "Expires", "0"), 0, true},
		{"max-age over expires", hdr("Date", date, "Expires", FormatDate(t0.Add(time.Hour)), "Cache-Control", "max-age=5"), 5 * time.Second, true},
		{"heuristic", hdr("Date", date, "Last-Modified", FormatDate(t0.Add(-100*time.Minute))), 10 * time.Minute, false},
		{"heuristic cap", hdr("Date", date, "Last-Modified", FormatDate(t0.Add(-1000*24*time.Hour))), 24 * time.Hour, false},
		{"cdn-cache-control wins", hdr("Date", date, "Cache-Control", "max-age=5", "CDN-Cache-Control", "max-age=50"), 50 * time.Second, true},
		{"bad max-age is stale", hdr("Date", date, "Cache-Control", "max-age=a1", "Expires", FormatDate(t0.Add(time.Hour))), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Stored{Status: 200, Header: tc.h, RequestTime: t0, ResponseTime: t0}
			life, explicit := p.Lifetime(s)
			if life != tc.life || explicit != tc.explicit {
				t.Errorf("lifetime = %v (explicit %v), want %v (%v)", life, explicit, tc.life, tc.explicit)
			}
		})
	}
	t.Run("heuristic off", func(t *testing.T) {
		s := &Stored{Status: 200, Header: hdr("Date", date, "Last-Modified", FormatDate(t0.Add(-100*time.Minute))), ResponseTime: t0}
		if life, _ := (Policy{}).Lifetime(s); life != 0 {
			t.Errorf("lifetime %v with heuristics off", life)
		}
	})
}

func TestAge(t *testing.T) {
	tests := []struct {
		name string
		h    Header
		req  time.Time
		now  time.Time
		want time.Duration
	}{
		{"resident time", hdr("Date", FormatDate(t0)), t0, t0.Add(10 * time.Second), 10 * time.Second},
		{"age field plus delay", hdr("Date", FormatDate(t0), "Age", "30"), t0.Add(-2 * time.Second), t0, 32 * time.Second},
		{"apparent age from old date", hdr("Date", FormatDate(t0.Add(-50*time.Second))), t0, t0, 50 * time.Second},
		{"non-numeric age is stale", hdr("Date", FormatDate(t0), "Age", "abc"), t0, t0, maxDelta},
		{"negative age is stale", hdr("Date", FormatDate(t0), "Age", "-1"), t0, t0, maxDelta},
		{"two age values are stale", hdr("Date", FormatDate(t0), "Age", "0, 0"), t0, t0, maxDelta},
		{"two age lines are stale", hdr("Date", FormatDate(t0), "Age", "0", "Age", "0"), t0, t0, maxDelta},
		{"age with a parameter is stale", hdr("Date", FormatDate(t0), "Age", "5;a=1"), t0, t0, maxDelta},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Stored{Status: 200, Header: tc.h, RequestTime: tc.req, ResponseTime: t0}
			if got := s.Age(tc.now); got != tc.want {
				t.Errorf("age = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStorable(t *testing.T) {
	p := DefaultPolicy()
	tests := []struct {
		name   string
		method string
		req    Header
		status int
		resp   Header
		ok     bool
		why    string
	}{
		{"max-age", "GET", nil, 200, hdr("Cache-Control", "max-age=60"), true, ""},
		{"post", "POST", nil, 200, hdr("Cache-Control", "max-age=60"), false, ReasonMethod},
		{"no-store", "GET", nil, 200, hdr("Cache-Control", "max-age=60, no-store"), false, ReasonNoStore},
		{"request no-store", "GET", hdr("Cache-Control", "no-store"), 200, hdr("Cache-Control", "max-age=60"), false, ReasonNoStore},
		{"private", "GET", nil, 200, hdr("Cache-Control", "private, max-age=60"), false, ReasonPrivate},
		{"private with fields is stored", "GET", nil, 200, hdr("Cache-Control", `private="X-A", max-age=60`), true, ""},
		{"authorization", "GET", hdr("Authorization", "x"), 200, hdr("Cache-Control", "max-age=60"), false, ReasonAuthorized},
		{"authorization public", "GET", hdr("Authorization", "x"), 200, hdr("Cache-Control", "public, max-age=60"), true, ""},
		{"authorization s-maxage", "GET", hdr("Authorization", "x"), 200, hdr("Cache-Control", "s-maxage=60"), true, ""},
		{"partial", "GET", nil, 206, hdr("Cache-Control", "max-age=60"), false, ReasonStatus},
		{"range request", "GET", hdr("Range", "bytes=0-1"), 200, hdr("Cache-Control", "max-age=60"), false, ReasonRange},
		{"302 without freshness", "GET", nil, 302, hdr("Last-Modified", FormatDate(t0)), false, ReasonNoFreshness},
		{"500 with max-age", "GET", nil, 500, hdr("Cache-Control", "max-age=60"), true, ""},
		{"200 with validator only", "GET", nil, 200, hdr("ETag", `"a"`), true, ""},
		{"200 bare", "GET", nil, 200, hdr("Content-Type", "text/plain"), false, ReasonNoFreshness},
		{"vary star", "GET", nil, 200, hdr("Cache-Control", "max-age=60", "Vary", "*"), false, ReasonVaryStar},
		{"must-understand unknown status", "GET", nil, 299, hdr("Cache-Control", "max-age=60, must-understand, no-store"), false, ReasonMustUnderstd},
		{"must-understand known status overrides no-store", "GET", nil, 200, hdr("Cache-Control", "max-age=60, must-understand, no-store"), true, ""},
		{"cdn no-store", "GET", nil, 200, hdr("Cache-Control", "max-age=60", "CDN-Cache-Control", "no-store"), false, ReasonNoStore},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req == nil {
				tc.req = Header{}
			}
			ok, why := p.Storable(tc.method, tc.req, tc.status, tc.resp)
			if ok != tc.ok || why != tc.why {
				t.Errorf("storable = %v %q, want %v %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	p := DefaultPolicy()
	stored := func(cc string) *Stored {
		return &Stored{Status: 200, Header: hdr("Date", FormatDate(t0), "Cache-Control", cc, "ETag", `"a"`), RequestTime: t0, ResponseTime: t0}
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name   string
		cc     string
		req    Header
		now    time.Time
		action Action
	}{
		{"fresh", "max-age=100", nil, at(10), Serve},
		{"stale", "max-age=100", nil, at(200), Validate},
		{"request no-cache", "max-age=100", hdr("Cache-Control", "no-cache"), at(10), Validate},
		{"pragma no-cache", "max-age=100", hdr("Pragma", "no-cache"), at(10), Validate},
		{"response no-cache", "max-age=100, no-cache", nil, at(10), Validate},
		{"request max-age", "max-age=100", hdr("Cache-Control", "max-age=5"), at(10), Validate},
		{"request min-fresh", "max-age=100", hdr("Cache-Control", "min-fresh=95"), at(10), Validate},
		{"max-stale allows", "max-age=100", hdr("Cache-Control", "max-stale=200"), at(200), Serve},
		{"max-stale too small", "max-age=100", hdr("Cache-Control", "max-stale=50"), at(200), Validate},
		{"max-stale any", "max-age=100", hdr("Cache-Control", "max-stale"), at(9000), Serve},
		{"must-revalidate beats max-stale", "max-age=100, must-revalidate", hdr("Cache-Control", "max-stale"), at(200), Validate},
		{"s-maxage beats max-stale", "s-maxage=100", hdr("Cache-Control", "max-stale"), at(200), Validate},
		{"stale-while-revalidate", "max-age=100, stale-while-revalidate=200", nil, at(200), ServeStale},
		{"past stale-while-revalidate", "max-age=100, stale-while-revalidate=50", nil, at(200), Validate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req == nil {
				tc.req = Header{}
			}
			if d := p.Decide(tc.req, stored(tc.cc), tc.now); d.Action != tc.action {
				t.Errorf("action = %v (%+v), want %v", d.Action, d, tc.action)
			}
		})
	}
	t.Run("stale-if-error", func(t *testing.T) {
		s := stored("max-age=100, stale-if-error=200")
		if !p.StaleIfError(Header{}, s, at(250)) {
			t.Error("stale-if-error window refused")
		}
		if p.StaleIfError(Header{}, s, at(400)) {
			t.Error("served stale past the stale-if-error window")
		}
		if p.StaleIfError(Header{}, stored("max-age=100"), at(150)) {
			t.Error("served stale on error without stale-if-error")
		}
		if !p.StaleIfError(hdr("Cache-Control", "stale-if-error=100"), stored("max-age=100"), at(150)) {
			t.Error("request stale-if-error refused")
		}
	})
}

func TestVary(t *testing.T) {
	fields, star := VaryFields(hdr("Vary", "accept-encoding, Accept-Language", "Vary", "Accept-Encoding"))
	if star || len(fields) != 2 || fields[0] != "Accept-Encoding" {
		t.Fatalf("fields %v star %v", fields, star)
	}
	sel := Select(fields, hdr("Accept-Encoding", "gzip,  br"))
	tests := []struct {
		name string
		req  Header
		want bool
	}{
		{"same", hdr("Accept-Encoding", "gzip,  br"), true},
		{"same, spelled otherwise", hdr("Accept-Encoding", "gzip", "Accept-Encoding", "br"), true},
		{"different", hdr("Accept-Encoding", "gzip"), false},
		{"extra field present", hdr("Accept-Encoding", "gzip, br", "Accept-Language", "en"), false},
		{"missing", hdr(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sel.Matches(fields, tc.req); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
	lang := Select([]string{"Accept-Language"}, hdr("Accept-Language", "en, de;q=0.5"))
	for _, v := range []string{"de;q=0.5, en", "EN,  De; q=0.5", " en ,de;q=0.5"} {
		if !lang.Matches([]string{"Accept-Language"}, hdr("Accept-Language", v)) {
			t.Errorf("Accept-Language %q does not match %q", v, "en, de;q=0.5")
		}
	}
	if lang.Matches([]string{"Accept-Language"}, hdr("Accept-Language", "en, fr;q=0.5")) {
		t.Error("another language matched")
	}
	if _, star := VaryFields(hdr("Vary", "a, *")); !star {
		t.Error("Vary: * not seen")
	}
}

func TestUpdateAndConditional(t *testing.T) {
	p := DefaultPolicy()
	s := &Stored{Status: 200, Header: hdr("ETag", `"a"`, "Content-Length", "5", "X-Test", "old", "Cache-Control", "max-age=1"), RequestTime: t0, ResponseTime: t0}
	if c := Conditional(s.Header); c["If-None-Match"][0] != `"a"` {
		t.Fatalf("conditional %v", c)
	}
	later := t0.Add(time.Minute)
	p.Update(s, hdr("ETag", `"b"`, "Content-Length", "0", "X-Test", "new", "Cache-Control", "max-age=100", "Connection", "close"), later, later)
	if get(s.Header, "X-Test") != "new" || get(s.Header, "ETag") != `"a"` || get(s.Header, "Content-Length") != "5" || has(s.Header, "Connection") {
		t.Errorf("merged header %v", s.Header)
	}
	if !p.Freshness(s, later.Add(time.Second)).Fresh() {
		t.Error("not fresh after the 304")
	}
	tests := []struct {
		name string
		req  Header
		want bool
	}{
		{"etag match", hdr("If-None-Match", `"x", "a"`), true},
		{"weak etag match", hdr("If-None-Match", `W/"a"`), true},
		{"star", hdr("If-None-Match", "*"), true},
		{"etag mismatch", hdr("If-None-Match", `"x"`), false},
		{"etag wins over date", hdr("If-None-Match", `"x"`, "If-Modified-Since", FormatDate(later)), false},
		{"no condition", hdr(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NotModified(tc.req, s.Header); got != tc.want {
				t.Errorf("not modified = %v, want %v", got, tc.want)
			}
		})
	}
	lm := hdr("Last-Modified", FormatDate(t0))
	if !NotModified(hdr("If-Modified-Since", FormatDate(t0)), lm) || NotModified(hdr("If-Modified-Since", FormatDate(t0.Add(-time.Second))), lm) {
		t.Error("If-Modified-Since misjudged")
	}
}

func TestInvalidated(t *testing.T) {
	target, _ := url.Parse("http://site/a/b")
	tests := []struct {
		name   string
		method string
		status int
		h      Header
		want   []string
	}{
		{"get", "GET", 200, nil, nil},
		{"post", "POST", 200, nil, []string{"http://site/a/b"}},
		{"post failed", "POST", 500, nil, nil},
		{"location same origin", "PUT", 201, hdr("Location", "/c", "Content-Location", "http://other/x"), []string{"http://site/a/b", "http://site/c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Invalidated(tc.method, target, tc.status, tc.h)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestStatusString(t *testing.T) {
	tests := []struct {
		s    Status
		want string
	}{
		{Status{Hit: true, TTL: 30 * time.Second, HasTTL: true}, "mure; hit; ttl=30"},
		{Status{Fwd: FwdURIMiss, FwdStatus: 200, Stored: true}, "mure; fwd=uri-miss; fwd-status=200; stored"},
		{Status{Fwd: FwdStale, FwdStatus: 304, Collapsed: true}, "mure; fwd=stale; fwd-status=304; collapsed"},
	}
	for _, tc := range tests {
		if got := tc.s.String("mure"); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
