// Command kube-proxy runs the upstream kube-proxy (pinned in ../go.mod) for the one-node host
// cluster of hack/host-cluster-up.sh; built by `hack/build-tools.sh node`.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
