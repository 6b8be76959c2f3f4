package agent

import (
	"bytes"
	"errors"
	"os"
)

// appArmorHost says why this host cannot enforce AppArmor profiles, nil
// when it can: as the kubelet's validateHost (runc's apparmor.IsEnabled),
// AppArmor's securityfs is mounted and the module says it is enabled.
func appArmorHost() error {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err == nil {
		if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && bytes.HasPrefix(b, []byte("Y")) {
			return nil
		}
	}
	return errors.New("AppArmor is not enabled on the host")
}
