// Command validate checks Kubernetes manifests offline: every YAML document of every file named
// on the command line is decoded strictly (unknown or duplicate fields are errors) into the
// k8s.io/api type its apiVersion and kind name, then checked against what deploy/kubernetes
// promises (docs/deployment.md): each Deployment's containers have resource requests and limits
// and readiness and liveness probes on /readyz and /livez, every autoscaler and disruption budget
// points at a Deployment of the set, every secret a container reads is a Secret of the set or is
// marked as provided by the operator. It prints one line per document and exits 1 on any problem.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

type header struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
}

// The kinds deploy/kubernetes may use; anything else is an error (so a typo in a kind is caught).
func newObject(apiVersion, kind string) any {
	switch apiVersion + "/" + kind {
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1/Namespace":
		return &corev1.Namespace{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "networking/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	}
	return nil
}

var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

type set struct {
	deployments map[string]*appsv1.Deployment
	secrets     map[string]*corev1.Secret
	configMaps  map[string]*corev1.ConfigMap
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	services    []*corev1.Service
	problems    []string
}

func (s *set) fail(format string, args ...any) {
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

func decodeStrict(data []byte, into any) error {
	asJSON, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	decoder := json.NewDecoder(bytes.NewReader(asJSON))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(into); err != nil {
		return err
	}
	return nil
}

func (s *set) load(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		s.fail("%s: %v", file, err)
		return
	}
	for index, document := range documentSeparator.Split(string(data), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(document, "")) == "" {
			continue
		}
		where := fmt.Sprintf("%s (document %d)", file, index+1)
		var h header
		if err := yaml.Unmarshal([]byte(document), &h); err != nil {
			s.fail("%s: not YAML: %v", where, err)
			continue
		}
		object := newObject(h.APIVersion, h.Kind)
		if object == nil {
			s.fail("%s: apiVersion %q kind %q is not one deploy/kubernetes may use", where, h.APIVersion, h.Kind)
			continue
		}
		if err := decodeStrict([]byte(document), object); err != nil {
			s.fail("%s: %s %s does not decode strictly into k8s.io/api: %v", where, h.Kind, h.Metadata.Name, err)
			continue
		}
		if h.Metadata.Name == "" {
			s.fail("%s: %s has no metadata.name", where, h.Kind)
		}
		fmt.Printf("ok %s: %s/%s %s\n", file, h.APIVersion, h.Kind, h.Metadata.Name)
		switch typed := object.(type) {
		case *appsv1.Deployment:
			s.deployments[typed.Name] = typed
		case *corev1.Secret:
			s.secrets[typed.Name] = typed
		case *corev1.ConfigMap:
			s.configMaps[typed.Name] = typed
		case *autoscalingv2.HorizontalPodAutoscaler:
			s.hpas = append(s.hpas, typed)
		case *policyv1.PodDisruptionBudget:
			s.pdbs = append(s.pdbs, typed)
		case *corev1.Service:
			s.services = append(s.services, typed)
		}
	}
}

// An operator-provided Secret (not in the manifests: it holds real keys) is named in this annotation
// of the Deployment, comma-separated.
const externalSecrets = "plc-settlement/secrets-provided-by-operator"

func (s *set) checkProbe(deployment, container, kind string, probe *corev1.Probe, path string) {
	if probe == nil {
		s.fail("Deployment %s container %s has no %s probe", deployment, container, kind)
		return
	}
	if probe.HTTPGet == nil || probe.HTTPGet.Path != path {
		s.fail("Deployment %s container %s: its %s probe must be an HTTP GET of %s", deployment, container, kind, path)
	}
}

func (s *set) check() {
	if len(s.deployments) == 0 {
		s.fail("no Deployment found")
	}
	for name, deployment := range s.deployments {
		spec := deployment.Spec
		if spec.Selector == nil {
			s.fail("Deployment %s has no selector", name)
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
		if err != nil {
			s.fail("Deployment %s: bad selector: %v", name, err)
			continue
		}
		if !selector.Matches(labels.Set(spec.Template.Labels)) {
			s.fail("Deployment %s: its selector does not match its pod template's labels", name)
		}
		provided := map[string]bool{}
		for _, secret := range strings.Split(deployment.Annotations[externalSecrets], ",") {
			if strings.TrimSpace(secret) != "" {
				provided[strings.TrimSpace(secret)] = true
			}
		}
		secretExists := func(secret string) bool { return s.secrets[secret] != nil || provided[secret] }
		for _, container := range spec.Template.Spec.Containers {
			requests, limits := container.Resources.Requests, container.Resources.Limits
			if requests.Cpu().IsZero() || requests.Memory().IsZero() || limits.Memory().IsZero() {
				s.fail("Deployment %s container %s must request CPU and memory and limit memory", name, container.Name)
			}
			s.checkProbe(name, container.Name, "readiness", container.ReadinessProbe, "/readyz")
			s.checkProbe(name, container.Name, "liveness", container.LivenessProbe, "/livez")
			for _, variable := range container.Env {
				if variable.ValueFrom != nil && variable.ValueFrom.SecretKeyRef != nil && !secretExists(variable.ValueFrom.SecretKeyRef.Name) {
					s.fail("Deployment %s container %s reads secret %s, which is neither in the manifests nor in its %s annotation", name, container.Name, variable.ValueFrom.SecretKeyRef.Name, externalSecrets)
				}
				if variable.ValueFrom != nil && variable.ValueFrom.ConfigMapKeyRef != nil && s.configMaps[variable.ValueFrom.ConfigMapKeyRef.Name] == nil {
					s.fail("Deployment %s container %s reads ConfigMap %s, which is not in the manifests", name, container.Name, variable.ValueFrom.ConfigMapKeyRef.Name)
				}
			}
			for _, source := range container.EnvFrom {
				if source.SecretRef != nil && !secretExists(source.SecretRef.Name) {
					s.fail("Deployment %s container %s reads secret %s, which is neither in the manifests nor in its %s annotation", name, container.Name, source.SecretRef.Name, externalSecrets)
				}
				if source.ConfigMapRef != nil && s.configMaps[source.ConfigMapRef.Name] == nil {
					s.fail("Deployment %s container %s reads ConfigMap %s, which is not in the manifests", name, container.Name, source.ConfigMapRef.Name)
				}
			}
		}
	}
	for _, hpa := range s.hpas {
		target := hpa.Spec.ScaleTargetRef
		if target.Kind != "Deployment" || s.deployments[target.Name] == nil {
			s.fail("HorizontalPodAutoscaler %s scales %s %s, which is not a Deployment of the manifests", hpa.Name, target.Kind, target.Name)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
			s.fail("HorizontalPodAutoscaler %s: minReplicas must be at least 2 and at most maxReplicas", hpa.Name)
		}
		if len(hpa.Spec.Metrics) == 0 {
			s.fail("HorizontalPodAutoscaler %s has no metric", hpa.Name)
		}
	}
	covered := map[string]bool{}
	for _, pdb := range s.pdbs {
		if pdb.Spec.Selector == nil {
			s.fail("PodDisruptionBudget %s has no selector", pdb.Name)
			continue
		}
		if (pdb.Spec.MinAvailable == nil) == (pdb.Spec.MaxUnavailable == nil) {
			s.fail("PodDisruptionBudget %s must set exactly one of minAvailable and maxUnavailable", pdb.Name)
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			s.fail("PodDisruptionBudget %s: bad selector: %v", pdb.Name, err)
			continue
		}
		matched := false
		for name, deployment := range s.deployments {
			if selector.Matches(labels.Set(deployment.Spec.Template.Labels)) {
				matched = true
				covered[name] = true
			}
		}
		if !matched {
			s.fail("PodDisruptionBudget %s selects no Deployment's pods", pdb.Name)
		}
	}
	for name := range s.deployments {
		if !covered[name] {
			s.fail("Deployment %s has no PodDisruptionBudget", name)
		}
	}
	for _, service := range s.services {
		selector := labels.SelectorFromSet(service.Spec.Selector)
		matched := false
		for _, deployment := range s.deployments {
			if len(service.Spec.Selector) > 0 && selector.Matches(labels.Set(deployment.Spec.Template.Labels)) {
				matched = true
			}
		}
		if !matched {
			s.fail("Service %s selects no Deployment's pods", service.Name)
		}
	}
}

// lookup follows a dotted path through decoded YAML maps.
func lookup(values map[string]any, dotted string) (any, bool) {
	var current any = values
	for _, key := range strings.Split(dotted, ".") {
		object, ok := current.(map[string]any)
		if !ok {
			return nil, false
		}
		current, ok = object[key]
		if !ok {
			return nil, false
		}
	}
	return current, true
}

// checkHelmValues checks the values for the official Temporal chart: the pinned server version,
// the shard count, SQL on PostgreSQL for both stores, the bundled stores off.
func (s *set) checkHelmValues(file, serverVersion, uiVersion string, shards int) {
	data, err := os.ReadFile(file)
	if err != nil {
		s.fail("%s: %v", file, err)
		return
	}
	asJSON, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		s.fail("%s: not YAML (or a key given twice): %v", file, err)
		return
	}
	var values map[string]any
	if err := json.Unmarshal(asJSON, &values); err != nil {
		s.fail("%s: %v", file, err)
		return
	}
	expect := func(dotted string, want any) {
		got, ok := lookup(values, dotted)
		if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			s.fail("%s: %s must be %v (is %v)", file, dotted, want, got)
		}
	}
	expect("server.image.tag", serverVersion)
	expect("web.image.tag", uiVersion)
	expect("server.config.numHistoryShards", shards)
	for _, store := range []string{"default", "visibility"} {
		expect("server.config.persistence."+store+".driver", "sql")
		expect("server.config.persistence."+store+".sql.driver", "postgres12")
		if secret, ok := lookup(values, "server.config.persistence."+store+".sql.existingSecret"); !ok || fmt.Sprint(secret) == "" {
			s.fail("%s: server.config.persistence.%s.sql.existingSecret must name the Secret holding the password", file, store)
		}
		if _, ok := lookup(values, "server.config.persistence."+store+".sql.password"); ok {
			s.fail("%s: server.config.persistence.%s.sql.password must not be in the file (existingSecret holds it)", file, store)
		}
	}
	for _, bundled := range []string{"cassandra", "mysql", "postgresql", "elasticsearch", "prometheus", "grafana"} {
		expect(bundled+".enabled", false)
	}
	fmt.Printf("ok %s: Temporal %s, %d history shards, SQL persistence and visibility on PostgreSQL\n", file, serverVersion, shards)
}

func main() {
	helmValues := flag.String("helm-values", "", "values file for the official Temporal Helm chart to check")
	serverVersion := flag.String("temporal-version", "", "the Temporal server version the Helm values must pin")
	uiVersion := flag.String("ui-version", "", "the Temporal UI version the Helm values must pin")
	shards := flag.Int("shards", 0, "the history shard count the Helm values must set")
	summary := flag.String("summary", "", "write the ConfigMaps' data and the Deployments' environment as JSON to this file")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: validate [-helm-values FILE -temporal-version V -ui-version V -shards N] [-summary FILE] MANIFEST.yaml...")
		os.Exit(2)
	}
	s := &set{deployments: map[string]*appsv1.Deployment{}, secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
	for _, file := range flag.Args() {
		s.load(file)
	}
	s.check()
	if *helmValues != "" {
		s.checkHelmValues(*helmValues, *serverVersion, *uiVersion, *shards)
	}
	if *summary != "" {
		out := map[string]any{"configMaps": map[string]map[string]string{}, "env": map[string][]string{}}
		for name, configMap := range s.configMaps {
			out["configMaps"].(map[string]map[string]string)[name] = configMap.Data
		}
		for name, deployment := range s.deployments {
			var names []string
			for _, container := range deployment.Spec.Template.Spec.Containers {
				for _, variable := range container.Env {
					names = append(names, variable.Name)
				}
			}
			out["env"].(map[string][]string)[name] = names
		}
		encoded, _ := json.Marshal(out)
		if err := os.WriteFile(*summary, encoded, 0o600); err != nil {
			s.fail("%s: %v", *summary, err)
		}
	}
	if len(s.problems) > 0 {
		for _, problem := range s.problems {
			fmt.Fprintln(os.Stderr, problem)
		}
		os.Exit(1)
	}
	fmt.Printf("%d manifest files: every document decodes strictly into k8s.io/api and keeps deploy/kubernetes's rules\n", flag.NArg())
}
