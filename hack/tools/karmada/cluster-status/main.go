// Command cluster-status computes the status a karmada-controller-manager
// (cluster-status-controller, push mode) would report for a member cluster,
// from that member's API server, and prints it as a merge patch for the
// Cluster's status subresource:
//
//	cluster-status --kubeconfig member1.kubeconfig > patch.json
//	kubectl patch cluster member1 --subresource=status --type=merge --patch-file patch.json
//
// It uses Karmada's exported API types and resource helpers; the local
// control plane has no controller-manager, so hack/local-up.sh runs this once
// after creating the member's nodes and pods.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/karmada-io/karmada/pkg/util"
	"github.com/karmada-io/karmada/pkg/util/helper"
)

func apiEnablements(client kubernetes.Interface) ([]clusterv1alpha1.APIEnablement, error) {
	_, lists, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		return nil, err
	}
	var out []clusterv1alpha1.APIEnablement
	for _, list := range lists {
		var resources []clusterv1alpha1.APIResource
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // subresource
			}
			resources = append(resources, clusterv1alpha1.APIResource{Name: r.Name, Kind: r.Kind})
		}
		sort.SliceStable(resources, func(i, j int) bool { return resources[i].Name < resources[j].Name })
		out = append(out, clusterv1alpha1.APIEnablement{GroupVersion: list.GroupVersion, Resources: resources})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GroupVersion < out[j].GroupVersion })
	return out, nil
}

func resourceSummary(nodes []corev1.Node, pods []corev1.Pod) *clusterv1alpha1.ResourceSummary {
	allocatable := corev1.ResourceList{}
	for _, n := range nodes {
		for k, v := range n.Status.Allocatable {
			sum := allocatable[k]
			sum.Add(v)
			allocatable[k] = sum
		}
	}
	allocating, allocated := util.EmptyResource(), util.EmptyResource()
	var nAllocating, nAllocated int64
	for i := range pods {
		p := &pods[i]
		switch {
		case p.Spec.NodeName == "":
			allocating.AddPodRequest(&p.Spec)
			nAllocating++
		case p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			allocated.AddPodRequest(&p.Spec)
			nAllocated++
		}
	}
	allocating.AddResourcePods(nAllocating)
	allocated.AddResourcePods(nAllocated)
	return &clusterv1alpha1.ResourceSummary{
		Allocatable: allocatable,
		Allocating:  allocating.ResourceList(),
		Allocated:   allocated.ResourceList(),
	}
}

func run() error {
	// A flag set of our own: imported packages register globals like --kubeconfig.
	fs := flag.NewFlagSet("cluster-status", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the member cluster")
	_ = fs.Parse(os.Args[1:])
	if *kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()

	var healthy int
	if err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&healthy).Error(); err != nil || healthy != 200 {
		return fmt.Errorf("member API server is not ready (status %d): %v", healthy, err)
	}
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	enablements, err := apiEnablements(client)
	if err != nil {
		return err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}

	status := clusterv1alpha1.ClusterStatus{
		KubernetesVersion: version.GitVersion,
		APIEnablements:    enablements,
		NodeSummary:       &clusterv1alpha1.NodeSummary{TotalNum: int32(len(nodes.Items))}, // #nosec G115
		ResourceSummary:   resourceSummary(nodes.Items, pods.Items),
	}
	for i := range nodes.Items {
		if helper.NodeReady(&nodes.Items[i]) {
			status.NodeSummary.ReadyNum++
		}
	}
	meta.SetStatusCondition(&status.Conditions, util.NewCondition(clusterv1alpha1.ClusterConditionCompleteAPIEnablements,
		"Complete", "collected complete APIEnablements from the cluster", metav1.ConditionTrue))
	meta.SetStatusCondition(&status.Conditions, util.NewCondition(clusterv1alpha1.ClusterConditionReady,
		"ClusterReady", "cluster is healthy and ready to accept workloads", metav1.ConditionTrue))

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"status": status})
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster-status:", err)
		os.Exit(1)
	}
}
