package table

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// registerComponentStatus is upstream's printComponentStatus: the Healthy
// condition as STATUS (Healthy when True, else Unhealthy; Unknown without
// one), its message and error.
func registerComponentStatus(c *Convertor) {
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Status", Type: "string", Description: "Status of the component conditions"},
		{Name: "Message", Type: "string", Description: "Message of the component conditions"},
		{Name: "Error", Type: "string", Description: "Error of the component conditions"},
	}, func(cs *corev1.ComponentStatus, _ time.Time) []any {
		status, message, errText := "Unknown", "", ""
		for _, c := range cs.Conditions {
			if c.Type == corev1.ComponentHealthy {
				status = "Unhealthy"
				if c.Status == corev1.ConditionTrue {
					status = "Healthy"
				}
				message, errText = c.Message, c.Error
				break
			}
		}
		return []any{cs.Name, status, message, errText}
	}), &corev1.ComponentStatus{}, &corev1.ComponentStatusList{})
}
