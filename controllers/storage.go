package controllers

import (
	"github.com/kite-project/kite/controllers/volume/localpath"
	"github.com/kite-project/kite/controllers/volume/persistentvolume"
	"github.com/kite-project/kite/controllers/volume/protection"
)

// The storage controllers' names (docs/storage.md).
const (
	// PersistentVolumeBinder binds claims to volumes, keeps their
	// phases and reclaims released volumes.
	PersistentVolumeBinder = persistentvolume.Name
	// LocalPathProvisioner provisions the local-path class's claims as
	// directories on the pod's node.
	LocalPathProvisioner = localpath.Name
	// PVCProtection removes a deleted claim's finalizer once no pod
	// uses it.
	PVCProtection = protection.ClaimName
	// PVProtection removes a deleted volume's finalizer once it is not
	// bound.
	PVProtection = protection.VolumeName
)

// storageEntries are the storage controllers' entries of the table.
func storageEntries() []entry {
	return []entry{
		{PersistentVolumeBinder, func(b builder) (Controller, error) {
			return built(persistentvolume.New(persistentvolume.Options{Client: b.client, Informers: b.informers}))
		}},
		{LocalPathProvisioner, func(b builder) (Controller, error) {
			return built(localpath.New(localpath.Options{Client: b.client, Informers: b.informers}))
		}},
		{PVCProtection, func(b builder) (Controller, error) {
			return built(protection.NewClaimController(protection.Options{Client: b.client, Informers: b.informers}))
		}},
		{PVProtection, func(b builder) (Controller, error) {
			return built(protection.NewVolumeController(protection.Options{Client: b.client, Informers: b.informers}))
		}},
	}
}
