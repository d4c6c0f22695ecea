// Command karmada-oracle runs the upstream Karmada v1.18.2 scheduler in-process as a test
// oracle for karmada-scheduler-rs.
//
// It reads the same input as `karmada-scheduler simulate` (multi-document YAML with Cluster,
// ResourceBinding and ClusterResourceBinding objects), drives the real upstream scheduler
// (informers, queue, worker, the clusterAffinities driver loop and the generic algorithm)
// against fake clientsets, and prints the same JSON result array.
//
// Usage:
//
//	karmada-oracle [simulate] -f PATH [-f PATH ...] [--estimator-replicas CLUSTER=N ...] [--feature-gates LIST] [-o json] [--timeout 60s] [--v N]
//
// With --feature-gates=SchedulingOvercommitProtection=true the bindings are handed to the
// scheduler one at a time, in input order, each once the previous one has its Scheduled
// condition: what each gets is then assumed for the ones after it, in the order simulate
// uses.
//
// The upstream code is only a Go module dependency of this tool; nothing of it is copied here.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	estimatorclient "github.com/karmada-io/karmada/pkg/estimator/client"
	"github.com/karmada-io/karmada/pkg/estimator/pb"
	"github.com/karmada-io/karmada/pkg/features"
	karmadafake "github.com/karmada-io/karmada/pkg/generated/clientset/versioned/fake"
	"github.com/karmada-io/karmada/pkg/scheduler"
	"github.com/karmada-io/karmada/pkg/scheduler/framework"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins/apienablement"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins/clusteraffinity"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins/clustereviction"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins/spreadconstraint"
	"github.com/karmada-io/karmada/pkg/scheduler/framework/plugins/tainttoleration"
	"github.com/karmada-io/karmada/pkg/util"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// output is one element of the result array, identical in shape to `simulate -o json`.
type output struct {
	Kind      string          `json:"kind"`
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Result    string          `json:"result"`
	Clusters  []outputCluster `json:"clusters"`
	Message   string          `json:"message"`
}

type outputCluster struct {
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
}

// binding is one input binding, in input order.
type binding struct {
	kind string // ResourceBinding or ClusterResourceBinding
	rb   *workv1alpha2.ResourceBinding
	crb  *workv1alpha2.ClusterResourceBinding
}

func (b binding) key() string {
	if b.kind == "ResourceBinding" {
		return b.rb.Namespace + "/" + b.rb.Name
	}
	return b.crb.Name
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "karmada-oracle: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var files, estimatorFlags stringList
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "simulate" {
		// accepted so that the oracle is a drop-in for `karmada-scheduler simulate`
		args = args[1:]
	}
	fs := flag.NewFlagSet("karmada-oracle", flag.ContinueOnError)
	fs.Var(&files, "f", "input file (repeatable)")
	fs.Var(&estimatorFlags, "estimator-replicas", "CLUSTER=N: stub accurate estimator answer (repeatable)")
	outFormat := fs.String("o", "json", "output format (json)")
	timeout := fs.Duration("timeout", 120*time.Second, "give up when the scheduler has not answered every binding by then")
	verbosity := fs.Int("v", -1, "klog verbosity; negative silences upstream logs")
	featureGates := fs.String("feature-gates", "", "feature gates as karmada-scheduler takes them (key=value,...)")
	declaredOrder := fs.Bool("declared-filter-order", true,
		"rewrite NoClusterFit messages as if the filter plugins ran in registry declaration order (the order simulate uses) "+
			"(upstream picks a random order per process, which only changes the reason a cluster failing several filters reports)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *outFormat != "json" {
		return fmt.Errorf("unsupported output format %q (only json)", *outFormat)
	}
	if len(files) == 0 {
		return errors.New("at least one -f PATH is required")
	}
	configureLogging(*verbosity)
	if *featureGates != "" {
		if err := features.FeatureGate.Set(*featureGates); err != nil {
			return fmt.Errorf("--feature-gates: %v", err)
		}
	}

	estimates, err := parseEstimatorFlags(estimatorFlags)
	if err != nil {
		return err
	}

	var clusters []*clusterv1alpha1.Cluster
	var bindings []binding
	for _, f := range files {
		c, b, err := readFile(f)
		if err != nil {
			return err
		}
		clusters = append(clusters, c...)
		bindings = append(bindings, b...)
	}

	results, err := schedule(clusters, bindings, estimates, *timeout)
	if err != nil {
		return err
	}
	if *declaredOrder {
		if err := canonicalFitErrors(clusters, bindings, results); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

func configureLogging(v int) {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	if v < 0 {
		_ = klogFlags.Set("logtostderr", "false")
		_ = klogFlags.Set("alsologtostderr", "false")
		_ = klogFlags.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
		return
	}
	_ = klogFlags.Set("v", strconv.Itoa(v))
}

func parseEstimatorFlags(flags []string) (map[string]int32, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]int32, len(flags))
	for _, f := range flags {
		name, n, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--estimator-replicas %q: want CLUSTER=N", f)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--estimator-replicas %q: %v", f, err)
		}
		out[name] = int32(v)
	}
	return out, nil
}

// readFile splits a multi-document YAML file and decodes the kinds that matter.
func readFile(path string) ([]*clusterv1alpha1.Cluster, []binding, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var clusters []*clusterv1alpha1.Cluster
	var bindings []binding
	for doc := 0; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %v", path, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		jsonData, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %v", path, doc, err)
		}
		if string(bytes.TrimSpace(jsonData)) == "null" {
			continue
		}
		var tm struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(jsonData, &tm); err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %v", path, doc, err)
		}
		switch tm.Kind {
		case "Cluster":
			c := &clusterv1alpha1.Cluster{}
			if err := json.Unmarshal(jsonData, c); err != nil {
				return nil, nil, fmt.Errorf("%s: document %d (Cluster): %v", path, doc, err)
			}
			clusters = append(clusters, c)
		case "ResourceBinding":
			rb := &workv1alpha2.ResourceBinding{}
			if err := json.Unmarshal(jsonData, rb); err != nil {
				return nil, nil, fmt.Errorf("%s: document %d (ResourceBinding): %v", path, doc, err)
			}
			bindings = append(bindings, binding{kind: tm.Kind, rb: rb})
		case "ClusterResourceBinding":
			crb := &workv1alpha2.ClusterResourceBinding{}
			if err := json.Unmarshal(jsonData, crb); err != nil {
				return nil, nil, fmt.Errorf("%s: document %d (ClusterResourceBinding): %v", path, doc, err)
			}
			bindings = append(bindings, binding{kind: tm.Kind, crb: crb})
		default:
			// other kinds do not matter to the scheduler
		}
	}
	return clusters, bindings, nil
}

// prepare makes the controller-loop checks always choose to schedule and keeps the upstream
// event filter from dropping the binding. None of the touched fields is read by the algorithm.
func prepare(obj metav1.Object, status *workv1alpha2.ResourceBindingStatus, spec *workv1alpha2.ResourceBindingSpec) {
	ann := obj.GetAnnotations()
	delete(ann, util.PolicyPlacementAnnotation) // absent annotation => "placement changed"
	obj.SetAnnotations(ann)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	// the scheduler only watches bindings that carry a policy (or managed-by) label
	labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] = "karmada-oracle"
	obj.SetLabels(labels)
	obj.SetDeletionTimestamp(nil)
	obj.SetFinalizers(nil)
	obj.SetResourceVersion("")
	spec.SchedulerName = ""
	spec.Suspension = nil
	// a fresh Scheduled condition must be written, so that it can be observed
	status.Conditions = nil
}

// recorder keeps, per binding key, the object as it was right after the first Scheduled
// condition was written: spec.clusters then holds that same attempt's result.
type recorder struct {
	mu      sync.Mutex
	want    map[string]bool
	got     map[string]runtime.Object
	allDone chan struct{}
}

func (r *recorder) record(key string, obj runtime.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.want[key] {
		return
	}
	if _, seen := r.got[key]; seen {
		return
	}
	r.got[key] = obj.DeepCopyObject()
	if len(r.got) == len(r.want) {
		close(r.allDone)
	}
}

func schedule(clusters []*clusterv1alpha1.Cluster, bindings []binding, estimates map[string]int32, timeout time.Duration) ([]output, error) {
	results := make([]output, len(bindings))
	objects := make([]runtime.Object, 0, len(clusters)+len(bindings))
	for _, c := range clusters {
		objects = append(objects, c.DeepCopy())
	}
	rec := &recorder{want: map[string]bool{}, got: map[string]runtime.Object{}, allDone: make(chan struct{})}
	scheduledIdx := []int{}
	// With the overcommit gate, bindings are handed over one by one (see the package doc).
	sequential := features.FeatureGate.Enabled(features.SchedulingOvercommitProtection)
	var later []runtime.Object
	for i, b := range bindings {
		var spec *workv1alpha2.ResourceBindingSpec
		if b.kind == "ResourceBinding" {
			results[i] = output{Kind: b.kind, Namespace: b.rb.Namespace, Name: b.rb.Name}
			spec = &b.rb.Spec
		} else {
			results[i] = output{Kind: b.kind, Name: b.crb.Name}
			spec = &b.crb.Spec
		}
		results[i].Clusters = []outputCluster{}
		if spec.Placement == nil {
			// upstream refuses such a binding before any scheduling attempt and writes no condition
			results[i].Result = "Error"
			results[i].Message = fmt.Sprintf("failed to get placement from %s(%s)", lowerFirst(b.kind), displayKey(b))
			continue
		}
		if rec.want[b.key()] {
			return nil, fmt.Errorf("duplicate binding %s %s: each binding needs a unique key", b.kind, b.key())
		}
		rec.want[b.key()] = true
		scheduledIdx = append(scheduledIdx, i)
		var obj runtime.Object
		if b.kind == "ResourceBinding" {
			rb := b.rb.DeepCopy()
			prepare(rb, &rb.Status, &rb.Spec)
			obj = rb
		} else {
			crb := b.crb.DeepCopy()
			prepare(crb, &crb.Status, &crb.Spec)
			obj = crb
		}
		if sequential {
			later = append(later, obj)
		} else {
			objects = append(objects, obj)
		}
	}
	if len(scheduledIdx) == 0 {
		return results, nil
	}

	if estimates != nil {
		registerStubEstimator(estimates)
	}

	karmadaClient := karmadafake.NewSimpleClientset(objects...)
	tracker := karmadaClient.Tracker()
	var lastPatch sync.Map // binding key -> time.Time of its last patch
	observe := func(action clienttesting.Action) (bool, runtime.Object, error) {
		var before runtime.Object
		if pa, ok := action.(clienttesting.PatchAction); ok && pa.GetSubresource() == "" {
			before, _ = tracker.Get(pa.GetResource(), pa.GetNamespace(), pa.GetName())
		}
		handled, obj, err := clienttesting.ObjectReaction(tracker)(action)
		if err != nil || obj == nil {
			return handled, obj, err
		}
		// The fake tracker does not bump the generation; an API server does on every spec
		// change, and the scheduler's update handler acts on that (the echo of its own write).
		if before != nil {
			if bumped := bumpGeneration(before, obj); bumped != nil {
				pa := action.(clienttesting.PatchAction)
				if uerr := tracker.Update(pa.GetResource(), bumped, pa.GetNamespace()); uerr == nil {
					obj = bumped
				}
			}
		}
		if m, merr := meta.Accessor(obj); merr == nil {
			key := m.GetName()
			if m.GetNamespace() != "" {
				key = m.GetNamespace() + "/" + key
			}
			lastPatch.Store(key, time.Now())
		}
		if pa, ok := action.(clienttesting.PatchAction); ok && pa.GetSubresource() == "status" {
			var conds []metav1.Condition
			key := ""
			switch o := obj.(type) {
			case *workv1alpha2.ResourceBinding:
				conds, key = o.Status.Conditions, o.Namespace+"/"+o.Name
			case *workv1alpha2.ClusterResourceBinding:
				conds, key = o.Status.Conditions, o.Name
			}
			if meta.FindStatusCondition(conds, workv1alpha2.Scheduled) != nil {
				rec.record(key, obj)
			}
		}
		return handled, obj, err
	}
	karmadaClient.PrependReactor("patch", "resourcebindings", observe)
	karmadaClient.PrependReactor("patch", "clusterresourcebindings", observe)

	dynamicClient := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	kubeClient := kubefake.NewSimpleClientset()
	sched, err := scheduler.NewScheduler(dynamicClient, karmadaClient, kubeClient,
		scheduler.WithSchedulerName(scheduler.DefaultScheduler),
		scheduler.WithEnableEmptyWorkloadPropagation(false),
		scheduler.WithEnableSchedulerPlugin([]string{"*"}),
	)
	if err != nil {
		return nil, fmt.Errorf("building the upstream scheduler: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sched.Run(ctx)

	deadline := time.After(timeout)
	for n, obj := range later {
		if err := tracker.Add(obj); err != nil {
			return nil, fmt.Errorf("adding binding %d: %v", n, err)
		}
		key := bindings[scheduledIdx[n]].key()
		for {
			rec.mu.Lock()
			_, done := rec.got[key]
			rec.mu.Unlock()
			if done {
				break
			}
			select {
			case <-deadline:
				return nil, fmt.Errorf("timed out after %s waiting for a Scheduled condition on %s", timeout, key)
			case <-time.After(time.Millisecond):
			}
		}
		// A binding the scheduler schedules again on the echo of its own write (Duplicated,
		// non-workload) may write another result, which is assumed in turn: wait until it has
		// settled and record what it settled on, as the daemon reports after its echo pass.
		if rescheduledOnEcho(bindings[scheduledIdx[n]]) {
			for {
				t, _ := lastPatch.Load(key)
				if last, ok := t.(time.Time); ok && time.Since(last) > 50*time.Millisecond {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if final, err := currentObject(karmadaClient, bindings[scheduledIdx[n]]); err == nil {
				rec.mu.Lock()
				rec.got[key] = final
				rec.mu.Unlock()
			}
		}
	}

	select {
	case <-rec.allDone:
	case <-time.After(timeout):
		rec.mu.Lock()
		missing := []string{}
		for k := range rec.want {
			if _, ok := rec.got[k]; !ok {
				missing = append(missing, k)
			}
		}
		rec.mu.Unlock()
		sort.Strings(missing)
		return nil, fmt.Errorf("timed out after %s waiting for a Scheduled condition on: %s", timeout, strings.Join(missing, ", "))
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, i := range scheduledIdx {
		obj := rec.got[bindings[i].key()]
		var spec workv1alpha2.ResourceBindingSpec
		var status workv1alpha2.ResourceBindingStatus
		switch o := obj.(type) {
		case *workv1alpha2.ResourceBinding:
			spec, status = o.Spec, o.Status
		case *workv1alpha2.ClusterResourceBinding:
			spec, status = o.Spec, o.Status
		}
		cond := meta.FindStatusCondition(status.Conditions, workv1alpha2.Scheduled)
		results[i].Message = cond.Message
		switch cond.Reason {
		case workv1alpha2.BindingReasonSuccess:
			results[i].Result = "Scheduled"
			for _, tc := range spec.Clusters {
				results[i].Clusters = append(results[i].Clusters, outputCluster{Name: tc.Name, Replicas: tc.Replicas})
			}
			sort.SliceStable(results[i].Clusters, func(a, b int) bool {
				return results[i].Clusters[a].Name < results[i].Clusters[b].Name
			})
		case workv1alpha2.BindingReasonNoClusterFit, workv1alpha2.BindingReasonUnschedulable:
			results[i].Result = "Unschedulable"
		default:
			results[i].Result = "Error"
		}
	}
	return results, nil
}

// bumpGeneration returns a copy of after with the generation of before plus one when the
// spec changed, or nil.
func bumpGeneration(before, after runtime.Object) runtime.Object {
	switch a := after.(type) {
	case *workv1alpha2.ResourceBinding:
		b, ok := before.(*workv1alpha2.ResourceBinding)
		if !ok || equality.Semantic.DeepEqual(b.Spec, a.Spec) {
			return nil
		}
		c := a.DeepCopy()
		c.Generation = b.Generation + 1
		return c
	case *workv1alpha2.ClusterResourceBinding:
		b, ok := before.(*workv1alpha2.ClusterResourceBinding)
		if !ok || equality.Semantic.DeepEqual(b.Spec, a.Spec) {
			return nil
		}
		c := a.DeepCopy()
		c.Generation = b.Generation + 1
		return c
	}
	return nil
}

// rescheduledOnEcho: the upstream scheduler schedules a Duplicated or non-workload binding
// again when the watch event of its own result write comes back.
func rescheduledOnEcho(b binding) bool {
	var spec *workv1alpha2.ResourceBindingSpec
	if b.kind == "ResourceBinding" {
		spec = &b.rb.Spec
	} else {
		spec = &b.crb.Spec
	}
	if !spec.IsWorkload() {
		return true
	}
	return spec.Placement != nil && spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated
}

// currentObject reads the binding back from the fake API server.
func currentObject(c *karmadafake.Clientset, b binding) (runtime.Object, error) {
	if b.kind == "ResourceBinding" {
		return c.WorkV1alpha2().ResourceBindings(b.rb.Namespace).Get(context.Background(), b.rb.Name, metav1.GetOptions{})
	}
	return c.WorkV1alpha2().ClusterResourceBindings().Get(context.Background(), b.crb.Name, metav1.GetOptions{})
}

// canonicalFitErrors recomputes the message of every NoClusterFit result with the upstream
// filter plugins run one by one in registry declaration order, for the same attempt the driver
// reports (the first clusterAffinities term tried, or the plain placement).
func canonicalFitErrors(clusters []*clusterv1alpha1.Cluster, bindings []binding, results []output) error {
	plugins := []func() (framework.Plugin, error){
		apienablement.New, tainttoleration.New, clusteraffinity.New, spreadconstraint.New, clustereviction.New,
	}
	var filters []framework.Plugin
	for _, f := range plugins {
		p, err := f()
		if err != nil {
			return err
		}
		filters = append(filters, p)
	}
	for i, b := range bindings {
		if results[i].Result != "Unschedulable" || !strings.HasPrefix(results[i].Message, "0/") {
			continue
		}
		var spec *workv1alpha2.ResourceBindingSpec
		var status *workv1alpha2.ResourceBindingStatus
		if b.kind == "ResourceBinding" {
			spec, status = &b.rb.Spec, b.rb.Status.DeepCopy()
		} else {
			spec, status = &b.crb.Spec, b.crb.Status.DeepCopy()
		}
		if terms := spec.Placement.ClusterAffinities; terms != nil {
			start := 0
			for idx, t := range terms {
				if status.SchedulerObservedAffinityName != "" && t.AffinityName == status.SchedulerObservedAffinityName {
					start = idx
					break
				}
			}
			if len(terms) > 0 {
				status.SchedulerObservedAffinityName = terms[start].AffinityName
			}
		}
		diagnosis := framework.Diagnosis{ClusterToResultMap: framework.ClusterToResultMap{}}
		for _, c := range clusters {
			if !c.DeletionTimestamp.IsZero() {
				continue
			}
			fctx := &framework.FilterContext{Context: context.TODO(), BindingSpec: spec, BindingStatus: status, Cluster: c}
			for _, p := range filters {
				var r *framework.Result
				if pc, ok := p.(framework.FilterPluginWithContext); ok {
					r = pc.FilterWithContext(fctx)
				} else {
					r = p.(framework.FilterPlugin).Filter(fctx.Context, spec, status, c)
				}
				if !r.IsSuccess() {
					diagnosis.ClusterToResultMap[c.Name] = r
					break
				}
			}
			if _, failed := diagnosis.ClusterToResultMap[c.Name]; !failed {
				return fmt.Errorf("%s %s: the scheduler reported no fitting cluster, but %s passes every filter", b.kind, b.key(), c.Name)
			}
		}
		results[i].Message = (&framework.FitError{NumAllClusters: len(clusters), Diagnosis: diagnosis}).Error()
	}
	return nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func displayKey(b binding) string {
	return b.key()
}

// registerStubEstimator registers the upstream accurate estimator (the real client code,
// including its all-or-nothing aggregation) whose per-cluster connections are replaced by
// in-process stubs that answer a fixed number. Clusters without a flag have no connection, so
// the upstream client fails for them exactly as with a missing estimator service.
func registerStubEstimator(estimates map[string]int32) {
	cache := estimatorclient.NewSchedulerEstimatorCache()
	for name, n := range estimates {
		cache.AddCluster(name, nil, fixedEstimator{replicas: n})
	}
	estimatorclient.RegisterSchedulerEstimator(estimatorclient.NewSchedulerEstimator(cache, 3*time.Second))
}

type fixedEstimator struct{ replicas int32 }

func (f fixedEstimator) MaxAvailableReplicas(_ context.Context, _ *pb.MaxAvailableReplicasRequest, _ ...grpc.CallOption) (*pb.MaxAvailableReplicasResponse, error) {
	return &pb.MaxAvailableReplicasResponse{MaxReplicas: f.replicas}, nil
}

func (f fixedEstimator) MaxAvailableComponentSets(_ context.Context, _ *pb.MaxAvailableComponentSetsRequest, _ ...grpc.CallOption) (*pb.MaxAvailableComponentSetsResponse, error) {
	return &pb.MaxAvailableComponentSetsResponse{MaxSets: f.replicas}, nil
}

func (f fixedEstimator) GetUnschedulableReplicas(_ context.Context, _ *pb.UnschedulableReplicasRequest, _ ...grpc.CallOption) (*pb.UnschedulableReplicasResponse, error) {
	return &pb.UnschedulableReplicasResponse{UnschedulableReplicas: 0}, nil
}
