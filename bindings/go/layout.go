package aoi

// The layouts the binding relies on, for layout_test.go: cgo is not
// available in test files, so the C side's sizes and offsets are read
// here.

/*
#include "aoi.h"
*/
import "C"

import "unsafe"

type fieldLayout struct {
	name        string
	goOff, cOff uintptr
	goLen, cLen uintptr
}

func eventLayout() (goSize, cSize uintptr, fields []fieldLayout) {
	var g Event
	var c C.aoi_event
	return unsafe.Sizeof(g), unsafe.Sizeof(c), []fieldLayout{
		{"id", unsafe.Offsetof(g.ID), unsafe.Offsetof(c.id), unsafe.Sizeof(g.ID), unsafe.Sizeof(c.id)},
		{"tag", unsafe.Offsetof(g.Tag), unsafe.Offsetof(c.tag), unsafe.Sizeof(g.Tag), unsafe.Sizeof(c.tag)},
		{"x", unsafe.Offsetof(g.X), unsafe.Offsetof(c.x), unsafe.Sizeof(g.X), unsafe.Sizeof(c.x)},
		{"y", unsafe.Offsetof(g.Y), unsafe.Offsetof(c.y), unsafe.Sizeof(g.Y), unsafe.Sizeof(c.y)},
		{"kind", unsafe.Offsetof(g.Kind), unsafe.Offsetof(c.kind), unsafe.Sizeof(g.Kind), unsafe.Sizeof(c.kind)},
		{"tick", unsafe.Offsetof(g.Tick), unsafe.Offsetof(c.tick), unsafe.Sizeof(g.Tick), unsafe.Sizeof(c.tick)},
	}
}

func moveLayout() (goSize, cSize uintptr, fields []fieldLayout) {
	var g Move
	var c C.aoi_move_op
	return unsafe.Sizeof(g), unsafe.Sizeof(c), []fieldLayout{
		{"id", unsafe.Offsetof(g.ID), unsafe.Offsetof(c.id), unsafe.Sizeof(g.ID), unsafe.Sizeof(c.id)},
		{"x", unsafe.Offsetof(g.X), unsafe.Offsetof(c.x), unsafe.Sizeof(g.X), unsafe.Sizeof(c.x)},
		{"y", unsafe.Offsetof(g.Y), unsafe.Offsetof(c.y), unsafe.Sizeof(g.Y), unsafe.Sizeof(c.y)},
	}
}
