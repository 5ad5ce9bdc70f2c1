// Package resource holds coopkv's resource-control vocabulary: request
// priorities now; resource groups, request units and fair shares arrive with
// resource control. It imports nothing of this module, so kv and readpool's
// users can share its types.
package resource
