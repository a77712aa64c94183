// Package archtest holds checks on the shape of the module: which packages
// may import what. It has no code of its own; its tests run with the rest.
package archtest
