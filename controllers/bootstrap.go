package controllers

import "github.com/kite-project/kite/controllers/bootstrap"

// bootstrapEntries are the bootstrap token controllers' entries of the
// table: kube-controller-manager's bootstrapsigner and tokencleaner.
func bootstrapEntries() []entry {
	return []entry{
		{BootstrapSigner, func(b builder) (Controller, error) {
			return built(bootstrap.NewSigner(bootstrap.Options{Client: b.client, Informers: b.informers}))
		}},
		{TokenCleaner, func(b builder) (Controller, error) {
			return built(bootstrap.NewCleaner(bootstrap.Options{Client: b.client, Informers: b.informers}))
		}},
	}
}
