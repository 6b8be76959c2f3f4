package serviceaccounttoken

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecide(t *testing.T) {
	ca := []byte("CA")
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "ns", UID: "sa-uid"}}
	secret := func(mut func(s *v1.Secret)) *v1.Secret {
		s := &v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", Annotations: map[string]string{v1.ServiceAccountNameKey: "robot"}},
			Type:       v1.SecretTypeServiceAccountToken,
		}
		if mut != nil {
			mut(s)
		}
		return s
	}
	filled := func(s *v1.Secret) {
		s.Data = map[string][]byte{"token": []byte("tok"), "ca.crt": ca, "namespace": []byte("ns")}
		s.Annotations[v1.ServiceAccountUIDKey] = "sa-uid"
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name      string
		secret    *v1.Secret
		sa        *v1.ServiceAccount
		want      Action
		wantToken bool
	}{
		{"new secret is filled with a token", secret(nil), sa, Fill, true},
		{"filled secret is left alone", secret(filled), sa, Nothing, false},
		{"changed CA is refilled, token kept", secret(func(s *v1.Secret) { filled(s); s.Data["ca.crt"] = []byte("old") }), sa, Fill, false},
		{"removed token is reissued", secret(func(s *v1.Secret) { filled(s); delete(s.Data, "token") }), sa, Fill, true},
		{"service account gone: delete", secret(filled), nil, Delete, false},
		{"service account deleting: delete", secret(filled), func() *v1.ServiceAccount { s := sa.DeepCopy(); s.DeletionTimestamp = &now; return s }(), Delete, false},
		{"service account recreated with another UID: delete", secret(func(s *v1.Secret) { filled(s); s.Annotations[v1.ServiceAccountUIDKey] = "old-uid" }), sa, Delete, false},
		{"secret being deleted: nothing", secret(func(s *v1.Secret) { s.DeletionTimestamp = &now }), sa, Nothing, false},
		{"other type: nothing", secret(func(s *v1.Secret) { s.Type = v1.SecretTypeOpaque }), sa, Nothing, false},
		{"no account annotation: nothing", secret(func(s *v1.Secret) { delete(s.Annotations, v1.ServiceAccountNameKey) }), sa, Nothing, false},
		{"no secret: nothing", nil, sa, Nothing, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, token := Decide(tc.secret, tc.sa, ca)
			if got != tc.want || token != tc.wantToken {
				t.Errorf("Decide = %v, token %v; want %v, %v", got, token, tc.want, tc.wantToken)
			}
		})
	}
}
