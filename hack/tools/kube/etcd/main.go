// Command etcd runs the upstream etcd server (go.etcd.io/etcd/server/v3,
// pinned in ../go.mod to the version Kubernetes itself uses).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
