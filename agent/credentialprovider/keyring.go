// Package credentialprovider finds the registry credentials of an image
// pull in a pod's imagePullSecrets, as the kubelet's credentialprovider
// and credentialprovider/secrets packages do: docker config JSON
// (kubernetes.io/dockerconfigjson) and .dockercfg (kubernetes.io/dockercfg)
// secrets become a keyring whose keys are registry hosts (globs allowed,
// ports significant) with an optional path prefix, looked up with the
// image's repository. Everything here is a pure decision; the agent reads
// the secrets and hands the result to the runtime's PullImage.
package credentialprovider

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// AuthConfig is one set of credentials for a registry, the kubelet's
// credentialprovider.AuthConfig (the fields of the CRI's AuthConfig).
type AuthConfig struct {
	Username      string
	Password      string
	Auth          string
	Email         string
	ServerAddress string
	IdentityToken string
	RegistryToken string
}

// DockerConfig is the "auths" map of a docker config: registry key to
// entry.
type DockerConfig map[string]DockerConfigEntry

// DockerConfigJSON is a config.json (kubernetes.io/dockerconfigjson).
type DockerConfigJSON struct {
	Auths DockerConfig `json:"auths"`
}

// DockerConfigEntry is one registry's credentials. In JSON an "auth"
// field (base64 of user:password) wins over username and password, as
// upstream's.
type DockerConfigEntry struct {
	Username string
	Password string
	Email    string
}

type dockerConfigEntryWithAuth struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// UnmarshalJSON reads an entry, decoding its "auth" field if set.
func (e *DockerConfigEntry) UnmarshalJSON(data []byte) error {
	var tmp dockerConfigEntryWithAuth
	if err := json.Unmarshal(data, &tmp); err != nil {
		return err
	}
	e.Username, e.Password, e.Email = tmp.Username, tmp.Password, tmp.Email
	if tmp.Auth == "" {
		return nil
	}
	var err error
	e.Username, e.Password, err = decodeAuth(tmp.Auth)
	return err
}

// decodeAuth decodes base64(user:password), padded or not.
func decodeAuth(field string) (user, password string, err error) {
	var decoded []byte
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		decoded, err = base64.StdEncoding.DecodeString(field)
	} else {
		decoded, err = base64.RawStdEncoding.DecodeString(field)
	}
	if err != nil {
		return "", "", err
	}
	user, password, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errors.New("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return user, password, nil
}

// Keyring holds credentials by registry key: a host (with port, globs
// per dot-separated part) and an optional path. The kubelet's
// BasicDockerKeyring.
type Keyring struct {
	// index holds the keys, longest (most specific) first.
	index []string
	creds map[string][]AuthConfig
}

// Add adds a docker config's entries. A key may carry a scheme and a
// /v1/ or /v2/ path (as `docker login` writes them); both are dropped.
// Entries that are no URL are left out.
func (k *Keyring) Add(cfg DockerConfig) {
	if k.creds == nil {
		k.creds = map[string][]AuthConfig{}
	}
	// Sorted for a stable order of credentials under one key.
	repos := make([]string, 0, len(cfg))
	for r := range cfg {
		repos = append(repos, r)
	}
	sort.Strings(repos)
	for _, repository := range repos {
		e := cfg[repository]
		if !strings.HasPrefix(repository, "https://") && !strings.HasPrefix(repository, "http://") {
			repository = "https://" + repository
		}
		parsed, err := url.Parse(repository)
		if err != nil {
			continue
		}
		path := parsed.Path
		if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
			path = path[3:]
		}
		key := parsed.Host
		if path != "" && path != "/" {
			key += path
		}
		k.creds[key] = append(k.creds[key], AuthConfig{Username: e.Username, Password: e.Password, Email: e.Email})
		if !slices.Contains(k.index, key) {
			k.index = append(k.index, key)
		}
	}
	// Reverse lexical order puts a longer key before its prefix, so the
	// most specific credentials are tried first, as upstream's.
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
}

// The key docker.io's credentials are found under.
const defaultRegistryHost = "index.docker.io"

// isDefaultRegistryMatch says whether image (a repository without scheme)
// lives on docker.io.
func isDefaultRegistryMatch(image string) bool {
	first, _, hasSlash := strings.Cut(image, "/")
	if first == "" {
		return false
	}
	if !hasSlash {
		return true
	}
	if first == "docker.io" || first == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// Lookup is every credential whose key matches image, most specific key
// first, and whether there were any. docker.io's images also match
// credentials for index.docker.io.
func (k *Keyring) Lookup(image string) ([]AuthConfig, bool) {
	var ret []AuthConfig
	for _, key := range k.index {
		if ok, _ := URLsMatchStr(key, image); ok {
			ret = append(ret, k.creds[key]...)
		}
	}
	if len(ret) > 0 {
		return ret, true
	}
	if isDefaultRegistryMatch(image) {
		if auth, ok := k.creds[defaultRegistryHost]; ok {
			return auth, true
		}
	}
	return nil, false
}

func parseSchemelessURL(s string) (*url.URL, error) {
	u, err := url.Parse("https://" + s)
	if err != nil {
		return nil, err
	}
	u.Scheme = ""
	return u, nil
}

func splitURL(u *url.URL) (parts []string, port string) {
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, ""
	}
	return strings.Split(host, "."), port
}

// URLsMatchStr says whether target (host[:port][/path]) matches glob: the
// same port, the same number of host parts each matching its glob part
// (filepath.Match), and glob's path a prefix of target's.
func URLsMatchStr(glob, target string) (bool, error) {
	g, err := parseSchemelessURL(glob)
	if err != nil {
		return false, err
	}
	t, err := parseSchemelessURL(target)
	if err != nil {
		return false, err
	}
	gParts, gPort := splitURL(g)
	tParts, tPort := splitURL(t)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false, nil
	}
	for i, gp := range gParts {
		ok, err := filepath.Match(gp, tParts[i])
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// FromSecrets is the keyring of a pod's pull secrets: the
// kubernetes.io/dockerconfigjson ones (key .dockerconfigjson) and the
// kubernetes.io/dockercfg ones (key .dockercfg); secrets of other types
// are ignored. Nil when none is such a secret. A secret that is not valid
// JSON is an error naming it, as upstream fails the pull then.
func FromSecrets(secrets []v1.Secret) (*Keyring, error) {
	k := &Keyring{}
	found := 0
	for _, s := range secrets {
		if b := s.Data[v1.DockerConfigJsonKey]; s.Type == v1.SecretTypeDockerConfigJson && len(b) > 0 {
			var cfg DockerConfigJSON
			if err := json.Unmarshal(b, &cfg); err != nil {
				return nil, fmt.Errorf("secret %s/%s: %s: %w", s.Namespace, s.Name, v1.DockerConfigJsonKey, err)
			}
			k.Add(cfg.Auths)
			found++
		} else if b := s.Data[v1.DockerConfigKey]; s.Type == v1.SecretTypeDockercfg && len(b) > 0 {
			var cfg DockerConfig
			if err := json.Unmarshal(b, &cfg); err != nil {
				return nil, fmt.Errorf("secret %s/%s: %s: %w", s.Namespace, s.Name, v1.DockerConfigKey, err)
			}
			k.Add(cfg)
			found++
		}
	}
	if found == 0 {
		return nil, nil
	}
	return k, nil
}

// Repository is the repository an image reference names, normalized as
// the kubelet's parsers.ParseImageName (docker's ParseNormalizedNamed): a
// first part without a dot or a colon that is not "localhost" is a
// docker.io path, docker.io's single names are under library/, and the
// tag and digest are dropped. "nginx:1.27" is docker.io/library/nginx,
// "127.0.0.1:5000/a/b:1" is 127.0.0.1:5000/a/b.
func Repository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	domain, rest := "docker.io", name
	if first, remainder, ok := strings.Cut(name, "/"); ok &&
		(strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first) {
		domain, rest = first, remainder
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	// A tag follows the last colon of the path (the domain's port is
	// already split off).
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		rest = rest[:i]
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain + "/" + rest
}
