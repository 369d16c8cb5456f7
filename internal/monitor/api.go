package monitor

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mure-dev/mure/internal/api"
)

// handleHistory answers GET /history (clients) and GET /peer/history
// (peers): the points newer than ?since= (Unix seconds; 0 or none: all)
// of the nodes named by ?node= (repeated; none: every node held), in the
// wire format of history.Dump.
func (s *Service) handleHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since int64
	if v := q.Get("since"); v != "" {
		var err error
		if since, err = strconv.ParseInt(v, 10, 64); err != nil {
			api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "since is a time in Unix seconds, like 1764000000")
			return
		}
	}
	var b []byte
	var err error
	if since == 0 && len(q["node"]) == 0 {
		b, _, err = s.historyJSON() // the whole history: encoded once per interval
	} else {
		b, err = json.Marshal(s.set.Dump(since, q["node"]...))
	}
	if err != nil {
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
