package serviceaccounttoken

import (
	v1 "k8s.io/api/core/v1"
)

// Action is what Decide says to do with a token Secret.
type Action int

const (
	// Nothing: the Secret is filled, or is not ours to fill.
	Nothing Action = iota
	// Fill the Secret: a token (when it has none), ca.crt, namespace.
	Fill
	// Delete the Secret: its ServiceAccount is gone or another one now
	// (upstream deletes such tokens).
	Delete
)

func (a Action) String() string {
	switch a {
	case Fill:
		return "Fill"
	case Delete:
		return "Delete"
	}
	return "Nothing"
}

// Decide is upstream's tokens controller decision (syncSecret) for one
// Secret of type kubernetes.io/service-account-token: secret as the cache
// holds it, sa its ServiceAccount (nil when there is none, after a live
// read), ca the bundle for ca.crt. Fill also says whether a new token is
// needed (the Secret has none); a token there is kept, as upstream keeps
// it.
func Decide(secret *v1.Secret, sa *v1.ServiceAccount, ca []byte) (action Action, needToken bool) {
	if secret == nil || secret.DeletionTimestamp != nil || secret.Type != v1.SecretTypeServiceAccountToken {
		return Nothing, false
	}
	if secret.Annotations[v1.ServiceAccountNameKey] == "" {
		return Nothing, false // validation refuses it; nothing to fill from
	}
	if sa == nil || sa.DeletionTimestamp != nil {
		return Delete, false
	}
	if uid := secret.Annotations[v1.ServiceAccountUIDKey]; uid != "" && uid != string(sa.UID) {
		return Delete, false
	}
	needToken = len(secret.Data[v1.ServiceAccountTokenKey]) == 0
	if needToken ||
		string(secret.Data[v1.ServiceAccountRootCAKey]) != string(ca) ||
		string(secret.Data[v1.ServiceAccountNamespaceKey]) != secret.Namespace ||
		secret.Annotations[v1.ServiceAccountUIDKey] == "" {
		return Fill, needToken
	}
	return Nothing, false
}

// Filled returns a copy of secret with token (unless empty), ca.crt, the
// namespace and the ServiceAccount's UID annotation, as upstream's
// controller writes them.
func Filled(secret *v1.Secret, sa *v1.ServiceAccount, ca []byte, token string) *v1.Secret {
	out := secret.DeepCopy()
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	if token != "" {
		out.Data[v1.ServiceAccountTokenKey] = []byte(token)
	}
	out.Data[v1.ServiceAccountRootCAKey] = ca
	out.Data[v1.ServiceAccountNamespaceKey] = []byte(secret.Namespace)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[v1.ServiceAccountUIDKey] = string(sa.UID)
	return out
}
