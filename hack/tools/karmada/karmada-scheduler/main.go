// Command karmada-scheduler runs the upstream Go karmada-scheduler (the
// reference implementation this project is checked against).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	controllerruntime "sigs.k8s.io/controller-runtime"

	"github.com/karmada-io/karmada/cmd/scheduler/app"
)

func main() {
	code := cli.Run(app.NewSchedulerCommand(controllerruntime.SetupSignalHandler()))
	logs.FlushLogs()
	os.Exit(code)
}
