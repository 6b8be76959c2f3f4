package supervisor

import (
	"fmt"
	"syscall"
)

// User is who a container's processes run as. nil: as the agent
// (root), as a container without a security context does.
type User struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// Credential is u for os.StartProcess (nil: unchanged).
func (u *User) Credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

// Become makes this process (every thread of it) u, groups first.
func (u *User) Become() error {
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
