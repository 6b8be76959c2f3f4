// Package pki keeps the API server's TLS material under its data directory:
// a self-signed CA and a serving certificate signed by it.
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
//	handler = authn.New(authn.Options{Token: token}).Wrap(handler)
//	srv := &http.Server{Handler: h, TLSConfig: b.TLSConfig}
//	go srv.ServeTLS(listener, "", "")       // certificates come from TLSConfig
//	kubeconfig.Write(filepath.Join(dataDir, "kubeconfig"), kubeconfig.Options{
//		Server: "https://" + listener.Addr().String(), CAData: b.CAPEM, Token: token})
package pki
