package serviceaccount

import (
	"time"

	"github.com/google/uuid"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	v1 "k8s.io/api/core/v1"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// privateClaims are upstream's "kubernetes.io" claims.
type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io,omitempty"`
}

type kubernetesClaims struct {
	Namespace string `json:"namespace,omitempty"`
	Svcacct   ref    `json:"serviceaccount,omitempty"`
	Pod       *ref   `json:"pod,omitempty"`
	Secret    *ref   `json:"secret,omitempty"`
	Node      *ref   `json:"node,omitempty"`
}

type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Bound is what a token is bound to: at most one of Pod and Secret, and
// a Node alone or as the node of the Pod.
type Bound struct {
	Pod    *v1.Pod
	Secret *v1.Secret
	Node   *v1.Node
}

// claims are upstream's token.Claims: subject, audiences and lifetime in
// the public claims, the ServiceAccount and bound objects in the private
// ones, and a random jti (ServiceAccountTokenJTI, on by default).
func claims(sa *v1.ServiceAccount, bound Bound, now time.Time, expirationSeconds int64, audiences []string) (*jwt.Claims, *privateClaims) {
	sc := &jwt.Claims{
		Subject:   apiserverserviceaccount.MakeUsername(sa.Namespace, sa.Name),
		Audience:  jwt.Audience(audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(time.Duration(expirationSeconds) * time.Second)),
		ID:        uuid.NewString(),
	}
	pc := &privateClaims{Kubernetes: kubernetesClaims{
		Namespace: sa.Namespace,
		Svcacct:   ref{Name: sa.Name, UID: string(sa.UID)},
	}}
	switch {
	case bound.Pod != nil:
		pc.Kubernetes.Pod = &ref{Name: bound.Pod.Name, UID: string(bound.Pod.UID)}
		if bound.Node != nil {
			pc.Kubernetes.Node = &ref{Name: bound.Node.Name, UID: string(bound.Node.UID)}
		}
	case bound.Secret != nil:
		pc.Kubernetes.Secret = &ref{Name: bound.Secret.Name, UID: string(bound.Secret.UID)}
	case bound.Node != nil:
		pc.Kubernetes.Node = &ref{Name: bound.Node.Name, UID: string(bound.Node.UID)}
	}
	return sc, pc
}
