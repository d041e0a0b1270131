package dashboard

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// answer is a JSON answer encoded once for a version of the index and
// served to every page that asks until the index changes: compressed for
// clients that take gzip, and named by an ETag, so that a page reloaded
// with nothing changed gets "304 Not Modified" and reuses what it has.
type answer struct {
	version uint64
	etag    string
	plain   []byte
	gz      []byte
}

// cached returns a's answer at version, building it with build when a
// holds another version (or none). The caller holds the index's lock.
func (a *answer) cached(boot string, version uint64, build func() any) (*answer, error) {
	if a.plain != nil && a.version == version {
		return a, nil
	}
	plain, err := json.Marshal(build())
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed) // the level is valid
	if _, err := zw.Write(plain); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	// The server's boot nonce keeps a version of an earlier server from
	// matching this one's.
	*a = answer{version: version, etag: `"` + boot + "-" + strconv.FormatUint(version, 10) + `"`, plain: append(plain, '\n'), gz: gz.Bytes()}
	return a, nil
}

// serve writes the answer, or 304 when the page holds it already.
func (a *answer) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// no-cache: the browser may keep the answer but asks each time
	// whether it is still current.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.plain
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body) // a client gone away cannot be told
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
