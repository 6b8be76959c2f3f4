package nodeproxy

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// WriteStatus writes err's Status as JSON, for the errors the proxy meets
// after it took the request over (the API server writes the others).
func WriteStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	writeStatus(w, err.Status())
}
