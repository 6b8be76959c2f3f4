package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/registry/builtin"
)

// admissionFlags are kube-apiserver's admission flags.
type admissionFlags struct {
	enable, disable []string
}

func (f *admissionFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.enable, "enable-admission-plugins", nil, "admission plugins to enable besides the default ones (kube-apiserver 1.37's names and defaults; the order they run in is fixed, not this list's)")
	fs.StringSliceVar(&f.disable, "disable-admission-plugins", nil, "admission plugins to disable, default ones included")
}

// apply checks the names (an unknown one, or one in both lists, is an
// error before anything starts) and sets them in opts.
func (f *admissionFlags) apply(opts *kite.Options) error {
	if _, err := builtin.EnabledAdmissionPlugins(f.enable, f.disable); err != nil {
		return fmt.Errorf("--enable-admission-plugins/--disable-admission-plugins: %w", err)
	}
	opts.EnableAdmissionPlugins, opts.DisableAdmissionPlugins = f.enable, f.disable
	return nil
}
