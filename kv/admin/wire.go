package admin

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/coopkv/coopkv/resource"
)

// The wire format of the handler's answers, defined once for it and for
// the programs that talk to it (kvctl, and kvbench when it answers in the
// handler's place).

// GroupsList is the body of GET /groups.
type GroupsList struct {
	// ResourceControl says whether the groups schedule reads; without it
	// they are kept (and may be configured) but every read runs by MLFQ
	// level or as the scheduler says.
	ResourceControl bool                  `json:"resource_control"`
	Groups          []resource.GroupStats `json:"groups"`
}

// Deleted is the body of DELETE /groups/NAME's answer.
type Deleted struct {
	Deleted string `json:"deleted"`
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// WriteError answers with code and an ErrorBody holding msg, as the
// handler does: for a server that answers in the handler's place.
func WriteError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorBody{Error: msg})
}

// ErrorMessage is the message of an error answer's body: its ErrorBody's
// Error, or the body's start (200 characters) when it has none — a
// proxy's page, another server — and "no message" for an empty one.
func ErrorMessage(body []byte) string {
	var e ErrorBody
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(body))
	if s == "" {
		return "no message"
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
