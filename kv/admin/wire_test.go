package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteError_ErrorMessageReadsItBack(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, http.StatusServiceUnavailable, "between stores")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var body ErrorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, "between stores", body.Error)
	assert.Equal(t, "between stores", ErrorMessage(rec.Body.Bytes()))
}

func TestErrorMessage_NotOurs(t *testing.T) {
	assert.Equal(t, "no message", ErrorMessage(nil))
	assert.Equal(t, "<html>502 Bad Gateway</html>", ErrorMessage([]byte("  <html>502 Bad Gateway</html>\n")))
	long := ErrorMessage([]byte(strings.Repeat("é", 300)))
	assert.Equal(t, strings.Repeat("é", 200)+"…", long, "a long page is cut at 200 characters")
}
