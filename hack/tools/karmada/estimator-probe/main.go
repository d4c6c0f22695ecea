// Command estimator-probe asks a karmada-scheduler-estimator over gRPC for
// MaxAvailableReplicas and prints the answer as JSON. Used by the
// crates/testenv end-to-end test until the Rust client in
// crates/estimator-client can do the same.
//
//	estimator-probe --address 127.0.0.1:PORT --cluster member1 \
//	    --request cpu=500m,memory=256Mi [--node-selector k=v,...] [--timeout 10s]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karmada-io/karmada/pkg/estimator/pb"
	estimatorservice "github.com/karmada-io/karmada/pkg/estimator/service"
)

func parsePairs(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("bad key=value pair %q", kv)
		}
		out[k] = v
	}
	return out, nil
}

func run() error {
	fs := flag.NewFlagSet("estimator-probe", flag.ExitOnError)
	address := fs.String("address", "", "estimator gRPC address host:port")
	cluster := fs.String("cluster", "", "member cluster name the estimator serves")
	request := fs.String("request", "cpu=100m", "per-replica resource request, name=quantity,...")
	nodeSelector := fs.String("node-selector", "", "node selector, key=value,...")
	namespace := fs.String("namespace", "default", "namespace of the workload")
	timeout := fs.Duration("timeout", 10*time.Second, "overall timeout")
	_ = fs.Parse(os.Args[1:])
	if *address == "" || *cluster == "" {
		return fmt.Errorf("--address and --cluster are required")
	}

	pairs, err := parsePairs(*request)
	if err != nil {
		return err
	}
	resources := corev1.ResourceList{}
	for k, v := range pairs {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("bad quantity for %s: %v", k, err)
		}
		resources[corev1.ResourceName(k)] = q
	}
	selector, err := parsePairs(*nodeSelector)
	if err != nil {
		return err
	}

	req := &pb.MaxAvailableReplicasRequest{
		Cluster: *cluster,
		ReplicaRequirements: &pb.ReplicaRequirements{
			Namespace: *namespace,
		},
	}
	if err := req.ReplicaRequirements.SetResourceRequest(resources); err != nil {
		return err
	}
	if len(selector) > 0 {
		req.ReplicaRequirements.NodeClaim = &pb.NodeClaim{NodeSelector: selector}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := grpc.NewClient(*address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := estimatorservice.NewEstimatorClient(conn).MaxAvailableReplicas(ctx, req, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"maxReplicas": resp.MaxReplicas})
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "estimator-probe:", err)
		os.Exit(1)
	}
}
