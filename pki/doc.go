// Package pki keeps the API server's secrets under its data directory: a
// self-signed CA, a serving certificate signed by it (ECDSA P-256, SANs
// 127.0.0.1, ::1, localhost and the configured hosts), and the admin
// bearer token. Private keys and the token are written 0600, atomically.
//
// Ensure generates both on first start and reuses them on restart. The CA is
// kept for as long as its files are readable, so kubeconfigs written earlier
// keep working; the serving certificate is reissued from that CA when the
// wanted hosts changed, when it is close to expiry, or when it no longer
// chains to the CA.
//
// EnsureToken does the same for the admin bearer token: generated once,
// stored 0600, reused on restart.
//
// How the apiserver wires it:
//
//	dir := filepath.Join(dataDir, "pki")
//	b, err := pki.Ensure(dir, pki.Options{Hosts: []string{bindAddress}})
//	token, err := pki.EnsureToken(filepath.Join(dir, pki.TokenFile))
//	a, err := authn.New(authn.Options{Tokens: []authn.Token{authn.Admin(token)}})
//	srv := &http.Server{Handler: a.Wrap(handler), TLSConfig: b.TLSConfig}
//	go srv.ServeTLS(listener, "", "")       // certificates come from TLSConfig
//	kubeconfig.Write(filepath.Join(dataDir, "kubeconfig"), kubeconfig.Options{
//		Server: "https://" + listener.Addr().String(), CAData: b.CAPEM, Token: token})
package pki
