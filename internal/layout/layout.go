// Package layout holds no code: its test checks that the service's packages
// import only what docs/architecture.md says each may, and that the
// document names every one of them.
package layout
