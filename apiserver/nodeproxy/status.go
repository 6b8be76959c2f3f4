package nodeproxy

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// WriteStatus writes err's Status as JSON, for the errors the proxy meets
// after it took the request over (the API server writes the others).
func WriteStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	json.NewEncoder(w).Encode(st)
}
