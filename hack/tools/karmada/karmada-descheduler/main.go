// Command karmada-descheduler runs the upstream Go karmada-descheduler (the
// reference our karmada-descheduler is checked against in the twins test).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	controllerruntime "sigs.k8s.io/controller-runtime"

	"github.com/karmada-io/karmada/cmd/descheduler/app"
)

func main() {
	code := cli.Run(app.NewDeschedulerCommand(controllerruntime.SetupSignalHandler()))
	logs.FlushLogs()
	os.Exit(code)
}
