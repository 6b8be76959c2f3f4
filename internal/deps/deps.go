package deps

import (
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apiserver/pkg/storage"
	_ "k8s.io/apiserver/pkg/storage/testing"
	_ "k8s.io/apiserver/pkg/storage/etcd3"
	_ "k8s.io/client-go/kubernetes"
	_ "github.com/spf13/cobra"
	_ "go.uber.org/goleak"
	_ "github.com/fsnotify/fsnotify"
)
