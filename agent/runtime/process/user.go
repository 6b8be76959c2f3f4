package process

import (
	"fmt"
	"math"
	"os/user"
	"strconv"
	"syscall"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// userSpec is who a container's processes run as. nil: as the agent
// (root), as a container without a security context does.
type userSpec struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// resolveUser turns the CRI security context's runAsUser, runAsUsername,
// runAsGroup and supplementalGroups into IDs. There is no image, so a
// user name, and the primary group of a user given by ID, come from the
// host's user database; a numeric user it does not know gets group 0, as
// an image without that user in /etc/passwd does.
func resolveUser(sc *runtimeapi.LinuxContainerSecurityContext) (*userSpec, error) {
	if sc == nil || sc.RunAsUser == nil && sc.RunAsUsername == "" && sc.RunAsGroup == nil && len(sc.SupplementalGroups) == 0 {
		return nil, nil
	}
	u := &userSpec{}
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

func (u *userSpec) credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

// become makes this process (every thread of it) u, groups first.
func (u *userSpec) become() error {
	if u == nil {
		return nil
	}
	groups := make([]int, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("set groups %v: %w", u.Groups, err)
	}
	if err := syscall.Setgid(int(u.GID)); err != nil {
		return fmt.Errorf("set gid %d: %w", u.GID, err)
	}
	if err := syscall.Setuid(int(u.UID)); err != nil {
		return fmt.Errorf("set uid %d: %w", u.UID, err)
	}
	return nil
}
