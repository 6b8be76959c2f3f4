package controllers

import "github.com/kite-project/kite/controllers/admissionpolicystatus"

// ValidatingAdmissionPolicyStatus writes ValidatingAdmissionPolicies'
// status.typeChecking (docs/admission.md).
const ValidatingAdmissionPolicyStatus = admissionpolicystatus.Name

// admissionPolicyEntries are the admission policy controllers' entries
// of the table.
func admissionPolicyEntries() []entry {
	return []entry{
		{ValidatingAdmissionPolicyStatus, func(b builder) (Controller, error) {
			return built(admissionpolicystatus.New(admissionpolicystatus.Options{Client: b.client, Informers: b.informers}))
		}},
	}
}
