package webdav

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"

	xdav "golang.org/x/net/webdav"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// Dead properties are kept with the file, in its user metadata (the same
// map as S3's x-amz-meta-*): the property {space}local is the name
// "dav_" + the query-escaped "space local" (a header-safe token, so an S3
// GET can show it), its value the property's inner XML. A PROPPATCH
// writes a new version with the same content (a server-side copy of the
// file onto itself); xml:lang is not kept.

const propPrefix = "dav_"

func propKey(n xml.Name) string { return propPrefix + url.QueryEscape(n.Space+" "+n.Local) }

func propName(k string) (xml.Name, bool) {
	if !strings.HasPrefix(k, propPrefix) {
		return xml.Name{}, false
	}
	s, err := url.QueryUnescape(k[len(propPrefix):])
	i := strings.LastIndexByte(s, ' ')
	if err != nil || i < 0 {
		return xml.Name{}, false
	}
	return xml.Name{Space: s[:i], Local: s[i+1:]}, true
}

// deadProps are the properties a file's attributes hold.
func deadProps(a files.Attrs) map[xml.Name]xdav.Property {
	out := map[xml.Name]xdav.Property{}
	for k, v := range a.User {
		if n, ok := propName(k); ok {
			out[n] = xdav.Property{XMLName: n, InnerXML: []byte(v)}
		}
	}
	return out
}

// patched applies patches to a copy of a, all or nothing: attributes
// over the file API's limit answer 507 for every property.
func patched(a files.Attrs, patches []xdav.Proppatch) (files.Attrs, []xdav.Propstat, bool) {
	out := a.Clone()
	out.User = maps.Clone(a.User)
	if out.User == nil {
		out.User = map[string]string{}
	}
	ok := xdav.Propstat{Status: http.StatusOK}
	for _, p := range patches {
		for _, prop := range p.Props {
			ok.Props = append(ok.Props, xdav.Property{XMLName: prop.XMLName})
			if p.Remove {
				delete(out.User, propKey(prop.XMLName))
				continue
			}
			out.User[propKey(prop.XMLName)] = string(prop.InnerXML)
		}
	}
	if err := files.CheckAttrs(out); err != nil {
		return a, []xdav.Propstat{{Status: http.StatusInsufficientStorage, Props: ok.Props, ResponseDescription: err.Error()}}, false
	}
	return out, []xdav.Propstat{ok}, true
}

// DeadProps implements webdav.DeadPropsHolder.
func (r *readFile) DeadProps() (map[xml.Name]xdav.Property, error) {
	return deadProps(r.info.Attrs), nil
}

// Patch implements webdav.DeadPropsHolder: a new version with the same
// content and the patched properties, if the file is still the version
// opened (409 otherwise).
func (r *readFile) Patch(patches []xdav.Proppatch) ([]xdav.Propstat, error) {
	if err := r.fs.allow(r.ctx, auth.Write, r.info.Path); err != nil {
		return forbidden(patches), nil
	}
	attrs, stats, ok := patched(r.info.Attrs, patches)
	if !ok {
		return stats, nil
	}
	info, err := r.fs.files.Copy(r.ctx, r.info.Path, r.info.Path, files.CopyOptions{Forwarding: fwd, SourceVersion: r.info.Version, Attrs: &attrs})
	if errors.Is(err, files.ErrPrecondition) {
		return []xdav.Propstat{{Status: http.StatusConflict, Props: stats[0].Props, ResponseDescription: "the file changed while its properties were patched"}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("proppatch %s: %w", r.info.Path, err)
	}
	r.info = info
	return stats, nil
}

func forbidden(patches []xdav.Proppatch) []xdav.Propstat {
	st := xdav.Propstat{Status: http.StatusForbidden}
	for _, p := range patches {
		for _, prop := range p.Props {
			st.Props = append(st.Props, xdav.Property{XMLName: prop.XMLName})
		}
	}
	return []xdav.Propstat{st}
}

// DeadProps implements webdav.DeadPropsHolder: what Patch was given so
// far (a COPY patches the new file before it closes).
func (w *writeFile) DeadProps() (map[xml.Name]xdav.Property, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return deadProps(w.attrs), nil
}

// Patch implements webdav.DeadPropsHolder for a file being written (a
// COPY's destination): the properties are written with a second version
// once the content is in (Close).
func (w *writeFile) Patch(patches []xdav.Proppatch) ([]xdav.Propstat, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	attrs, stats, ok := patched(w.attrs, patches)
	if ok {
		w.attrs, w.patched = attrs, true
	}
	return stats, nil
}

// setProps writes the patched properties after the content (Close).
func (w *writeFile) setProps(ctx context.Context, fs Files) error {
	w.mu.Lock()
	attrs, info := w.attrs, w.info
	w.mu.Unlock()
	got, err := fs.Copy(ctx, w.path, w.path, files.CopyOptions{Forwarding: fwd, SourceVersion: info.Version, Attrs: &attrs})
	if err != nil {
		return fmt.Errorf("properties of %s: %w", w.path, err)
	}
	w.mu.Lock()
	w.info = got
	w.mu.Unlock()
	return nil
}
