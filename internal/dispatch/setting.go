package dispatch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mure-dev/mure/internal/meta"
)

// SettingPolicy is the cluster-wide setting of the front door's
// scheduling policy (docs/dispatch.md): one of PolicyNames, or "" to leave
// each node's --front-policy. The holder switches at once: the next new
// connection uses it. dispatch owns the setting; meta keeps its value.
const SettingPolicy = "dispatch.policy"

func init() {
	meta.RegisterSetting(meta.Setting{Key: SettingPolicy, Default: "", Validate: validatePolicySetting})
}

func validatePolicySetting(value string) error {
	if value != "" && !slices.Contains(PolicyNames, value) {
		return fmt.Errorf("%s must be one of %s, or empty for each node's --front-policy, not %q", SettingPolicy, strings.Join(PolicyNames, ", "), value)
	}
	return nil
}

// PolicySetting returns the policy the cluster's settings name ("": none).
func PolicySetting(settings map[string]string) string { return settings[SettingPolicy] }
