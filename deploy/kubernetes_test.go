package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const kubeDir = "kubernetes"

// strictDecoder decodes the kinds the manifests may hold, rejecting
// unknown and duplicated fields.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, autoscalingv2.AddToScheme, policyv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// manifests holds the decoded objects of the kustomization.
type manifests struct {
	configMap      *corev1.ConfigMap
	secret         *corev1.Secret
	deployment     *appsv1.Deployment
	service        *corev1.Service
	hpa            *autoscalingv2.HorizontalPodAutoscaler
	pdb            *policyv1.PodDisruptionBudget
	serviceMonitor *monitoringv1.ServiceMonitor
}

// decodeAll decodes every YAML document of b strictly into its API type.
func decodeAll(t *testing.T, dec runtime.Decoder, name string, b []byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	rd := utilyaml.NewYAMLReader(bufioReader(b))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if gvk.Version == "" || gvk.Kind == "" {
			t.Errorf("%s: an object without apiVersion or kind", name)
		}
		objs = append(objs, obj)
	}
	return objs
}

// build runs kustomize on the folder, as `kubectl apply -k` would, and
// decodes its output.
func build(t *testing.T) manifests {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), kubeDir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", kubeDir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	var m manifests
	for _, obj := range decodeAll(t, strictDecoder(t), "kustomize build", out) {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			m.configMap = o
		case *corev1.Secret:
			m.secret = o
		case *appsv1.Deployment:
			m.deployment = o
		case *corev1.Service:
			m.service = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.hpa = o
		case *policyv1.PodDisruptionBudget:
			m.pdb = o
		case *monitoringv1.ServiceMonitor:
			m.serviceMonitor = o
		default:
			t.Errorf("unexpected object %T", obj)
		}
	}
	if m.configMap == nil || m.secret == nil || m.deployment == nil || m.service == nil || m.hpa == nil || m.pdb == nil || m.serviceMonitor == nil {
		t.Fatalf("the kustomization lacks an object: %+v", m)
	}
	return m
}

// TestKubernetesManifestsDecodeStrictly: each file, and kustomization.yaml
// itself, decodes into its official type with no unknown field; every file
// is in the kustomization.
func TestKubernetesManifestsDecodeStrictly(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(kubeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustypes.Kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.Kind != kustypes.KustomizationKind || k.APIVersion != kustypes.KustomizationVersion {
		t.Errorf("kustomization.yaml: %s %s", k.APIVersion, k.Kind)
	}
	files, _ := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	dec := strictDecoder(t)
	for _, f := range files {
		name := filepath.Base(f)
		if name == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(k.Resources, name) {
			t.Errorf("%s is not among the kustomization's resources", name)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if objs := decodeAll(t, dec, name, b); len(objs) == 0 {
			t.Errorf("%s holds no object", name)
		}
	}
	build(t)
}

// TestKubernetesDeployment: the pod spec a cluster would run.
func TestKubernetesDeployment(t *testing.T) {
	m := build(t)
	d := m.deployment
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	env := containerEnv(t, m, c)
	checkSettings(t, "deployment", env, c.Args)
	if len(c.Command) != 0 {
		t.Errorf("command %v: the image's entrypoint is companion", c.Command)
	}
	if !strings.Contains(c.Image, "companion") {
		t.Errorf("image %q", c.Image)
	}

	// Ports: the container's are the ones the service listens on.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if got, want := ports["http"], port(t, setting(t, env, "addr")); int(got) != want {
		t.Errorf("container port http %d, the service listens on %d", got, want)
	}
	if addr := setting(t, env, "metrics-addr"); addr != "" {
		if got, want := ports["metrics"], port(t, addr); int(got) != want {
			t.Errorf("container port metrics %d, the service serves /metrics on %d", got, want)
		}
	}
	if host := strings.Split(setting(t, env, "addr"), ":")[0]; host != "0.0.0.0" && host != "" {
		t.Errorf("the service listens on %s: the kubelet's probes would not reach it", host)
	}

	// Probes on /health (alive) and /ready (takes traffic), on the API port.
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", name)
			return
		}
		if p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: %s on port %s, want %s on http", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
		}
	}
	probe("liveness", c.LivenessProbe, "/health")
	probe("readiness", c.ReadinessProbe, "/ready")
	probe("startup", c.StartupProbe, "/health")

	// Resources: requests for scheduling and the autoscaler, a memory limit.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.Cmp(c.Resources.Requests[corev1.ResourceMemory]) < 0 {
		t.Errorf("memory limit %v", q)
	}

	// A restrictive security context.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("no security context")
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("the pod may run as root")
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("no RuntimeDefault seccomp profile")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("privilege escalation allowed")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the root filesystem is writable")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities %+v: drop ALL, add none", sc.Capabilities)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted: the service never calls the Kubernetes API")
	}

	// Termination grace: longer than the shutdown delay and grace together.
	shutdown := duration(t, setting(t, env, "shutdown-delay")) + duration(t, setting(t, env, "shutdown-grace"))
	var grace time.Duration
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	if grace <= shutdown {
		t.Errorf("terminationGracePeriodSeconds is %v, not longer than the service's shutdown delay plus grace, %v", grace, shutdown)
	}

	// Several replicas on one PostgreSQL: never SQLite, which is one
	// process's file.
	if u := env["COMPANION_DATABASE_URL"]; !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		t.Errorf("database URL %q: replicas share one PostgreSQL", u)
	}
	if env["COMPANION_REDIS_URL"] == "" {
		t.Error("no Redis: rate limits and resumable streams are not shared between replicas without it")
	}

	// Files the settings name are mounted.
	for _, k := range []string{"COMPANION_API_KEYS_FILE", "COMPANION_JWT_SECRET_FILE"} {
		if path := env[k]; path != "" {
			if _, ok := mountedFiles(t, m, c)[path]; !ok {
				t.Errorf("$%s is %s, which no volume provides", k, path)
			}
		}
	}
	if env["COMPANION_API_KEYS_FILE"] == "" && env["COMPANION_JWT_JWKS_URL"] == "" {
		t.Error("authentication is off")
	}
}

// containerEnv is the container's environment as the kubelet would set it:
// envFrom the ConfigMap, then env, from the Secret where it says so.
func containerEnv(t *testing.T, m manifests, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil && from.ConfigMapRef.Name == m.configMap.Name:
			for k, v := range m.configMap.Data {
				env[from.Prefix+k] = v
			}
		default:
			t.Errorf("envFrom %+v names no object of the kustomization", from)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := m.secret.StringData[ref.Key]
			if ref.Name != m.secret.Name || !ok {
				t.Errorf("$%s: no key %s in secret %s", e.Name, ref.Key, ref.Name)
			}
			if v != "" {
				env[e.Name] = v
			}
		default:
			t.Errorf("$%s: a value from neither the Secret nor the manifest", e.Name)
		}
	}
	return env
}

// mountedFiles are the files the container sees from the Secret, by path.
func mountedFiles(t *testing.T, m manifests, c corev1.Container) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, vm := range c.VolumeMounts {
		i := slices.IndexFunc(m.deployment.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		if i < 0 {
			t.Errorf("volume mount %s has no volume", vm.Name)
			continue
		}
		v := m.deployment.Spec.Template.Spec.Volumes[i]
		if v.Secret == nil {
			continue
		}
		if v.Secret.SecretName != m.secret.Name {
			t.Errorf("volume %s: secret %s is not the kustomization's", v.Name, v.Secret.SecretName)
		}
		for _, item := range v.Secret.Items {
			content, ok := m.secret.StringData[item.Key]
			if !ok {
				t.Errorf("volume %s: no key %s in the Secret", v.Name, item.Key)
			}
			files[filepath.Join(vm.MountPath, item.Path)] = content
		}
	}
	return files
}

// TestKubernetesObjectsFitTogether: the Service, autoscaler, disruption
// budget and ServiceMonitor point at the Deployment and its ports.
func TestKubernetesObjectsFitTogether(t *testing.T) {
	m := build(t)
	d := m.deployment
	podLabels := labels.Set(d.Spec.Template.Labels)
	sel, err := metav1LabelSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(podLabels) {
		t.Errorf("the Deployment's selector does not select its pods: %v", err)
	}
	if !labels.SelectorFromSet(m.service.Spec.Selector).Matches(podLabels) {
		t.Errorf("the Service selects %v, not the pods %v", m.service.Spec.Selector, podLabels)
	}
	containerPorts := map[string]bool{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		containerPorts[p.Name] = true
	}
	servicePorts := map[string]bool{}
	for _, p := range m.service.Spec.Ports {
		servicePorts[p.Name] = true
		if !containerPorts[p.TargetPort.String()] {
			t.Errorf("service port %s targets %s, not a container port", p.Name, p.TargetPort.String())
		}
	}

	// Autoscaler: on the Deployment, at least two replicas, which the
	// Deployment leaves it to set.
	ref := m.hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != d.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("the autoscaler scales %+v", ref)
	}
	if m.hpa.Spec.MinReplicas == nil || *m.hpa.Spec.MinReplicas < 2 || m.hpa.Spec.MaxReplicas < *m.hpa.Spec.MinReplicas {
		t.Errorf("autoscaler replicas %v to %d", m.hpa.Spec.MinReplicas, m.hpa.Spec.MaxReplicas)
	}
	if d.Spec.Replicas != nil {
		t.Errorf("the Deployment sets replicas (%d), which the autoscaler owns", *d.Spec.Replicas)
	}
	if len(m.hpa.Spec.Metrics) == 0 {
		t.Error("the autoscaler has no metric")
	}
	for _, metric := range m.hpa.Spec.Metrics {
		if metric.Resource != nil {
			if _, ok := d.Spec.Template.Spec.Containers[0].Resources.Requests[metric.Resource.Name]; !ok {
				t.Errorf("the autoscaler measures %s, which the container does not request", metric.Resource.Name)
			}
		}
	}

	// Disruption budget: on the pods, and a drain can proceed.
	pdbSel, err := metav1LabelSelector(m.pdb.Spec.Selector)
	if err != nil || !pdbSel.Matches(podLabels) {
		t.Errorf("the disruption budget does not select the pods: %v", err)
	}
	if m.pdb.Spec.MaxUnavailable == nil && m.pdb.Spec.MinAvailable == nil {
		t.Error("the disruption budget sets neither maxUnavailable nor minAvailable")
	}
	if mu := m.pdb.Spec.MaxUnavailable; mu != nil && mu.IntValue() < 1 && mu.String() == "0" {
		t.Error("maxUnavailable 0 blocks every drain")
	}
	if ma := m.pdb.Spec.MinAvailable; ma != nil && ma.IntValue() >= int(*m.hpa.Spec.MinReplicas) {
		t.Errorf("minAvailable %s blocks drains at %d replicas", ma.String(), *m.hpa.Spec.MinReplicas)
	}

	// ServiceMonitor: the Service's metrics port, under the job name the
	// dashboard and alerts use.
	smSel, err := metav1LabelSelector(&m.serviceMonitor.Spec.Selector)
	if err != nil || !smSel.Matches(labels.Set(m.service.Labels)) {
		t.Errorf("the ServiceMonitor does not select the Service: %v", err)
	}
	if len(m.serviceMonitor.Spec.Endpoints) == 0 {
		t.Fatal("the ServiceMonitor has no endpoint")
	}
	for _, e := range m.serviceMonitor.Spec.Endpoints {
		if !servicePorts[e.Port] || e.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint %q %s: not the Service's metrics port", e.Port, e.Path)
		}
	}
	if job := m.service.Labels[m.serviceMonitor.Spec.JobLabel]; job != "companion" {
		t.Errorf("the scrape job would be %q; the dashboard and alert rules expect companion", job)
	}
}

// TestKubernetesSettingsRun starts the service with the manifests' settings
// and files and checks its probes and its shutdown within the pod's grace.
func TestKubernetesSettingsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the service")
	}
	m := build(t)
	c := m.deployment.Spec.Template.Spec.Containers[0]
	env := containerEnv(t, m, c)
	limit := time.Duration(*m.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	runWith(t, c.Args, env, mountedFiles(t, m, c), limit)
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

func metav1LabelSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}
