package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/coreos/go-semver/semver"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// minimumVersions are, per etcd minor release, the first patch release
// whose watch progress notifications Kite can rely on. The watch cache
// takes a progress notification's revision as "every event up to here has
// been sent" and asks for one (RequestWatchProgress) before a consistent
// read; earlier releases can send one ahead of events still on their way
// (etcd-io/etcd#15220, fixed in 3.4.25 and 3.5.8) or answer a request
// wrongly (etcd-io/etcd#17507, fixed in 3.4.31 and 3.5.13). These are the
// versions below which upstream's apiserver turns RequestWatchProgress off
// (k8s.io/apiserver/pkg/storage/feature, endpointSupportsRequestWatchProgress);
// Kite, which has no path without it, refuses them. Minor releases after
// the last listed have both fixes; releases before the first listed are
// too old altogether.
var minimumVersions = []semver.Version{
	{Major: 3, Minor: 4, Patch: 31},
	{Major: 3, Minor: 5, Patch: 13},
}

// CheckVersion says whether an etcd server of version (as its Status
// reports it, "3.5.8") is recent enough for Kite, and if not, why.
func CheckVersion(version string) error {
	v, err := semver.NewVersion(version)
	if err != nil {
		return fmt.Errorf("etcd version %q cannot be read: %w", version, err)
	}
	oldest := minimumVersions[0]
	newest := minimumVersions[len(minimumVersions)-1]
	for _, min := range minimumVersions {
		if v.Major == min.Major && v.Minor == min.Minor && v.LessThan(min) {
			return fmt.Errorf("etcd %s is too old: Kite needs %s or later in the %d.%d series (or %s and later series), for reliable watch progress notifications", version, min, min.Major, min.Minor, newer(newest))
		}
	}
	if v.LessThan(semver.Version{Major: oldest.Major, Minor: oldest.Minor}) {
		return fmt.Errorf("etcd %s is too old: Kite needs %s or later", version, oldest)
	}
	return nil
}

// newer names the first minor release after v's.
func newer(v semver.Version) string { return fmt.Sprintf("%d.%d", v.Major, v.Minor+1) }

// checkServerVersions asks each server its version and checks it. Servers
// that do not answer within timeout are not judged (the connectivity check
// has already found one that does), but at least one must answer.
func checkServerVersions(ctx context.Context, c *clientv3.Client, servers []string, timeout time.Duration) error {
	var firstErr error
	answered := 0
	for _, s := range servers {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		st, err := c.Status(sctx, s)
		cancel()
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("etcd at %s: reading its status: %w", s, err)
			}
			continue
		}
		answered++
		if err := CheckVersion(st.Version); err != nil {
			return fmt.Errorf("etcd at %s: %w", s, err)
		}
	}
	if answered == 0 {
		return firstErr
	}
	return nil
}
