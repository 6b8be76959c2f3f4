package process

import (
	"fmt"
	"math"
	"os/user"
	"strconv"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// resolveUser turns the CRI security context's runAsUser, runAsUsername,
// runAsGroup and supplementalGroups into IDs. There is no image, so a
// user name, and the primary group of a user given by ID, come from the
// host's user database; a numeric user it does not know gets group 0, as
// an image without that user in /etc/passwd does.
func resolveUser(sc *runtimeapi.LinuxContainerSecurityContext) (*supervisor.User, error) {
	if sc == nil || sc.RunAsUser == nil && sc.RunAsUsername == "" && sc.RunAsGroup == nil && len(sc.SupplementalGroups) == 0 {
		return nil, nil
	}
	u := &supervisor.User{}
	switch {
	case sc.RunAsUser != nil:
		uid, err := id32("runAsUser", sc.RunAsUser.Value)
		if err != nil {
			return nil, err
		}
		u.UID = uid
		if pw, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
			gid, _ := strconv.ParseUint(pw.Gid, 10, 32)
			u.GID = uint32(gid)
		}
	case sc.RunAsUsername != "":
		pw, err := user.Lookup(sc.RunAsUsername)
		if err != nil {
			return nil, fmt.Errorf("runAsUsername %q: %w", sc.RunAsUsername, err)
		}
		uid, _ := strconv.ParseUint(pw.Uid, 10, 32)
		gid, _ := strconv.ParseUint(pw.Gid, 10, 32)
		u.UID, u.GID = uint32(uid), uint32(gid)
	}
	if sc.RunAsGroup != nil {
		gid, err := id32("runAsGroup", sc.RunAsGroup.Value)
		if err != nil {
			return nil, err
		}
		u.GID = gid
	}
	for _, g := range sc.SupplementalGroups {
		gid, err := id32("supplementalGroups", g)
		if err != nil {
			return nil, err
		}
		u.Groups = append(u.Groups, gid)
	}
	return u, nil
}

func id32(field string, v int64) (uint32, error) {
	if v < 0 || v > math.MaxUint32-1 {
		return 0, fmt.Errorf("%s %d: not a valid ID", field, v)
	}
	return uint32(v), nil
}
