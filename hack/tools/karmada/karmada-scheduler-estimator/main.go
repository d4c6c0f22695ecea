// Command karmada-scheduler-estimator runs the upstream Go
// karmada-scheduler-estimator for one member cluster.
//
// Note: upstream listens for gRPC on ":<server-port>" (all interfaces) and has
// no flag for the bind address; hack/build-tools.sh builds this package with a
// generated -overlay that changes only that listen address to 127.0.0.1.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	controllerruntime "sigs.k8s.io/controller-runtime"

	"github.com/karmada-io/karmada/cmd/scheduler-estimator/app"
)

func main() {
	code := cli.Run(app.NewSchedulerEstimatorCommand(controllerruntime.SetupSignalHandler()))
	logs.FlushLogs()
	os.Exit(code)
}
