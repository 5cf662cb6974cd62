// Package bench measures orphanwatch against the floor (a bare pdata traversal) and against the
// collector's own stateful trace components. It is a module of its own so that the contrib
// dependencies it compares against stay out of the main go.mod. See docs/performance.md.
package bench
