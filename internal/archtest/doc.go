// Package archtest holds checks on the shape of the module: which packages
// may import what, and which modules baton's go.mod may require (none that
// only the lab module, lab/, needs). It has no code of its own; its tests
// run with the rest.
package archtest
