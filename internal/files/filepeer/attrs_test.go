package filepeer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

var testAttrs = files.Attrs{ContentType: "text/html", Headers: map[string]string{"Content-Disposition": `attachment; filename="é.txt"`},
	User: map[string]string{"k": "v\nw", "{DAV:}x": "<a/>"}, PartsETag: `"abc-2"`}

// A file's MD5 and attributes cross the wire with a forwarded read's
// answer and a forwarded write.
func TestAttrsCrossTheWire(t *testing.T) {
	t.Run("read answer", func(t *testing.T) {
		want := files.Info{Path: "p", Version: 7, ETag: `"7"`, Size: 3, SHA256: "s", MD5: "0123456789abcdef0123456789abcdef",
			Modified: time.Unix(5, 6).UTC(), Attrs: testAttrs}
		h := http.Header{}
		setInfoHeader(h, want)
		got, err := infoFromHeader("p", h)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
		h.Set("X-Mure-Attrs", "!!")
		if _, err := infoFromHeader("p", h); err == nil || !strings.Contains(err.Error(), "X-Mure-Attrs") {
			t.Fatalf("a bad attrs header: %v", err)
		}
	})
	t.Run("forwarded write", func(t *testing.T) {
		var got files.Attrs
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			json.Unmarshal([]byte(r.URL.Query().Get("attrs")), &got)
			w.Write([]byte(`{"path":"p"}`))
		}))
		defer srv.Close()
		tr := New(func() *http.Client { return srv.Client() })
		_, err := tr.Put(context.Background(), strings.TrimPrefix(srv.URL, "http://"), "p", strings.NewReader("x"), files.PutOptions{Size: 1, Attrs: testAttrs})
		if err != nil || !reflect.DeepEqual(got, testAttrs) {
			t.Fatalf("holder got %+v, %v; want %+v", got, err, testAttrs)
		}
	})
}
