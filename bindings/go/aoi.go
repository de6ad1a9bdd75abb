// Package aoi is the Go binding of libaoi, a multithreaded, spatially
// sharded Area Of Interest engine (include/aoi.h is the contract).
//
// A World is driven from one goroutine at a time, the host: it submits
// operations (Add, Move, MoveMany, Set*, Remove), calls Tick, then
// delivers the tick's events (Deliver, or DeliverSegment from several
// goroutines at once) and may query the state as of that tick.
//
// Lifetime rule: the []Event a delivery callback receives is the engine's
// own memory, handed over without a copy. It is valid only during that
// call; copy what must outlive it.
//
// Threads: rule 1 of aoi.h (one host call at a time) is enforced rather
// than assumed: a call made while another call or a delivery runs on the
// same World returns ErrBusy instead of racing. DeliverSegment of
// different segments may run at once (rule 2). A callback must not call
// into its World (it gets ErrBusy).
//
// Linking: the package links the static libaoi.a of a CMake build
// directory, ../../build by default; point CGO_LDFLAGS=-L/that/dir at
// another (test.sh does).
package aoi

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -DAOI_STATIC
#cgo LDFLAGS: -L${SRCDIR}/../../build -l:libaoi.a -lck -lpthread -lm
#include <stdint.h>
#include <stdlib.h>
#include "aoi.h"

// The world travels as a uintptr_t: a Go value of type *C.aoi_world
// (an incomplete struct, so "not in heap" to Go) is boxed, an allocation,
// at every call's pointer check.
#define W(w) ((aoi_world *)(w))

int aoi_go_deliver(uintptr_t world, unsigned segment, uintptr_t handle);

// Results by value: an out-parameter that points at a Go variable makes
// the variable escape to the heap, an allocation per call.
typedef struct aoi_go_result {
  int rc;
  size_t n;
} aoi_go_result;

static uintptr_t aoi_go_create(aoi_config *config, uintptr_t pool, int *rc)
{
  aoi_world *w = NULL;
  config->pool = (aoi_pool *)pool;
  *rc = aoi_create(config, &w);
  return (uintptr_t)w;
}

static uintptr_t aoi_go_pool_create(const aoi_pool_config *config, int *rc)
{
  aoi_pool *p = NULL;
  *rc = aoi_pool_create(config, &p);
  return (uintptr_t)p;
}

static int aoi_go_pool_destroy(uintptr_t p)
{
  return aoi_pool_destroy((aoi_pool *)p);
}

static unsigned aoi_go_pool_threads(uintptr_t p)
{
  return aoi_pool_threads((const aoi_pool *)p);
}

static int aoi_go_tick_many(const uintptr_t *worlds, size_t n, int *results)
{
  return aoi_tick_many((aoi_world *const *)worlds, n, results);
}

static int aoi_go_destroy(uintptr_t w) { return aoi_destroy(W(w)); }

static unsigned aoi_go_segments(uintptr_t w)
{
  return aoi_delivery_segments(W(w));
}

static int aoi_go_add(uintptr_t w, uint64_t id, uint64_t tag, float x,
                      float y, float radius, unsigned flags, uint32_t layers,
                      uint32_t interest)
{
  aoi_entity e = {id, tag, x, y, radius, flags, layers, interest};
  return aoi_add(W(w), &e);
}

static int aoi_go_move(uintptr_t w, uint64_t id, float x, float y)
{
  return aoi_move(W(w), id, x, y);
}

static aoi_go_result aoi_go_move_many(uintptr_t w, const aoi_move_op *ops,
                                      size_t n)
{
  aoi_go_result r = {0, 0};
  r.rc = aoi_move_many(W(w), ops, n, &r.n);
  return r;
}

static int aoi_go_set_radius(uintptr_t w, uint64_t id, float radius)
{
  return aoi_set_radius(W(w), id, radius);
}

static int aoi_go_set_layers(uintptr_t w, uint64_t id, uint32_t layers,
                             uint32_t interest)
{
  return aoi_set_layers(W(w), id, layers, interest);
}

static int aoi_go_set_appeal(uintptr_t w, uint64_t id, float appeal)
{
  return aoi_set_appeal(W(w), id, appeal);
}

static int aoi_go_set_cap(uintptr_t w, uint64_t id, uint32_t cap)
{
  return aoi_set_cap(W(w), id, cap);
}

static int aoi_go_set_tag(uintptr_t w, uint64_t id, uint64_t tag)
{
  return aoi_set_tag(W(w), id, tag);
}

static int aoi_go_remove(uintptr_t w, uint64_t id)
{
  return aoi_remove(W(w), id);
}

static int aoi_go_tick(uintptr_t w) { return aoi_tick(W(w)); }
static int aoi_go_tick_begin(uintptr_t w) { return aoi_tick_begin(W(w)); }
static int aoi_go_tick_poll(uintptr_t w) { return aoi_tick_poll(W(w)); }
static int aoi_go_tick_end(uintptr_t w) { return aoi_tick_end(W(w)); }

typedef struct aoi_go_ref {
  int rc;
  aoi_ref ref;
} aoi_go_ref;

static aoi_go_ref aoi_go_ref_of(uintptr_t w, uint64_t id)
{
  aoi_go_ref r = {0, 0};
  r.rc = aoi_ref_of(W(w), id, &r.ref);
  return r;
}

static int aoi_go_move_ref(uintptr_t w, aoi_ref ref, float x, float y)
{
  return aoi_move_ref(W(w), ref, x, y);
}

// A borrowed array and its length, for aoi_drain and aoi_pending.
typedef struct aoi_go_borrowed {
  int rc;
  const void *items;
  size_t n;
} aoi_go_borrowed;

static aoi_go_borrowed aoi_go_drain(uintptr_t w, uint64_t id)
{
  aoi_go_borrowed r = {0, NULL, 0};
  const aoi_event *events = NULL;
  r.rc = aoi_drain(W(w), id, &events, &r.n);
  r.items = events;
  return r;
}

static aoi_go_borrowed aoi_go_pending(uintptr_t w)
{
  aoi_go_borrowed r = {0, NULL, 0};
  const uint64_t *ids = NULL;
  r.rc = aoi_pending(W(w), &ids, &r.n);
  r.items = ids;
  return r;
}

static aoi_go_result aoi_go_query_circle(uintptr_t w, float x, float y,
                                         float radius, uint32_t mask,
                                         uint64_t *ids, size_t capacity)
{
  aoi_go_result r = {0, 0};
  r.rc = aoi_query_circle(W(w), x, y, radius, mask, ids, capacity, &r.n);
  return r;
}

static aoi_go_result aoi_go_view(uintptr_t w, uint64_t id, uint64_t *ids,
                                 size_t capacity)
{
  aoi_go_result r = {0, 0};
  r.rc = aoi_view(W(w), id, ids, capacity, &r.n);
  return r;
}

static aoi_go_result aoi_go_watchers_of(uintptr_t w, uint64_t id,
                                        uint64_t *ids, size_t capacity)
{
  aoi_go_result r = {0, 0};
  r.rc = aoi_watchers_of(W(w), id, ids, capacity, &r.n);
  return r;
}

static int aoi_go_stats(uintptr_t w, aoi_stats *stats)
{
  return aoi_world_stats(W(w), stats);
}
*/
import "C"

import (
	"errors"
	"math"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Error is an AOI_E* code of the C library. The package's Err* values
// are the only Errors it returns, so errors.Is and == both work.
type Error int

func (e Error) Error() string { return errorText[-int(e)] }

// The C library's error codes.
var (
	ErrInvalid  error = Error(C.AOI_EINVAL)  // bad argument or config
	ErrNoMemory error = Error(C.AOI_ENOMEM)  // an allocation failed
	ErrExists   error = Error(C.AOI_EEXIST)  // Add of a live id
	ErrNotFound error = Error(C.AOI_ENOENT)  // the id is not live
	ErrCoord    error = Error(C.AOI_ECOORD)  // NaN or infinite coordinate
	ErrRadius   error = Error(C.AOI_ERADIUS) // radius/appeal out of range
	ErrFlags    error = Error(C.AOI_EFLAGS)  // neither watcher nor marker
	ErrSys      error = Error(C.AOI_ESYS)    // the system refused a thread
	ErrBusy     error = Error(C.AOI_EBUSY)   // a tick, delivery or call runs
)

// ErrClosed is returned by every call on a World after Close.
var ErrClosed = errors.New("aoi: world is closed")

var (
	errorText [10]string
	errorList = [10]error{nil, ErrInvalid, ErrNoMemory, ErrExists,
		ErrNotFound, ErrCoord, ErrRadius, ErrFlags, ErrSys, ErrBusy}
)

func init() {
	for i := 1; i < len(errorText); i++ {
		errorText[i] = C.GoString(C.aoi_strerror(C.int(-i)))
	}
}

// check turns a return code into one of the Err* values, without
// allocating.
func check(rc C.int) error {
	if rc == 0 {
		return nil
	}
	if i := -int(rc); i > 0 && i < len(errorList) {
		return errorList[i]
	}
	return Error(rc)
}

// Version is the linked library's "major.minor.patch".
func Version() string { return C.GoString(C.aoi_version_string()) }

// Entity flags.
const (
	Watcher = C.AOI_WATCHER // has a view and receives events
	Marker  = C.AOI_MARKER  // can be seen by watchers
)

// AllLayers is every layer, for Layers, Interest and query masks.
const AllLayers = math.MaxUint32

// Shape is a view shape (Config.Shape).
type Shape uint32

const (
	Circle Shape = C.AOI_SHAPE_CIRCLE // dx² + dy² <= R²
	Square Shape = C.AOI_SHAPE_SQUARE // |dx| <= R and |dy| <= R
	Cells  Shape = C.AOI_SHAPE_CELLS  // nine-grid of Config.CellSize
)

// Run says where a world's ticks run (Config.Run).
type Run uint32

const (
	RunOwn    Run = C.AOI_RUN_OWN    // on threads of its own (default)
	RunCaller Run = C.AOI_RUN_CALLER // on the goroutine that calls Tick
	RunPool   Run = C.AOI_RUN_POOL   // on Config.Pool's threads
)

// MoveBand is a distance band for move events (Config.MoveBands).
type MoveBand struct {
	Distance float32 // beyond this distance ...
	Period   uint32  // ... moves are told every Period ticks
}

// Config mirrors aoi_config. Its zero value is aoi_config_default's
// configuration: every zero field takes the C default.
type Config struct {
	Run     Run // default RunOwn; RunPool when Pool is set
	Pool    *Pool
	Threads uint // lanes; 0 = one per core (RunOwn), else 1
	Shards  uint // 0 = one per lane

	// Bounds hint for the first shard layout; all zero = (0,0)-(1000,1000).
	MinX, MinY, MaxX, MaxY float32
	// Largest radius or appeal; 0 = the default, 500.
	MaxRadius float32
	// Extra distance before a visible entity leaves a view.
	Hysteresis float32
	// NoMoveEvents turns `move` events off.
	NoMoveEvents bool
	Shape        Shape
	CellSize     float32 // Cells: the cell side (> 0)
	// Ticks between rebalances: 0 = the default (16), negative = never.
	RebalanceInterval int
	MoveBands         []MoveBand // at most 8, distances increasing
	PinThreads        bool
	MeasureCPU        bool // fill Stats.WorkNs and SpanNs
}

// Entity is what Add takes (aoi_entity).
type Entity struct {
	ID  uint64
	Tag uint64 // the host's own value, handed back with events
	X   float32
	Y   float32
	// View radius, 0 .. MaxRadius.
	Radius   float32
	Flags    uint32 // Watcher, Marker or both
	Layers   uint32 // the layers it is in
	Interest uint32 // the layers it watches
}

// Move is one move of MoveMany, laid out exactly as aoi_move_op.
type Move struct {
	ID   uint64
	X, Y float32
}

// EventKind is an event's kind, in output order within a watcher's tick.
type EventKind uint32

const (
	Leave EventKind = C.AOI_LEAVE
	Enter EventKind = C.AOI_ENTER
	Moved EventKind = C.AOI_MOVE
)

// Event is one event, laid out exactly as aoi_event (32 bytes).
type Event struct {
	ID   uint64    // the entity that entered, left or moved
	Tag  uint64    // that entity's tag as of the tick that made it
	X, Y float32   // its position (enter, move); 0 for leave
	Kind EventKind // Leave, Enter or Moved
	Tick uint32    // the tick that produced it (low 32 bits, from 1)
}

// DeliverFunc receives one watcher's undelivered events, older ticks
// first. events is the engine's memory: valid only during the call.
type DeliverFunc func(watcher, watcherTag uint64, events []Event)

// Compile-time layout checks; layout_test.go checks every offset too.
var (
	_ [unsafe.Sizeof(Event{}) - unsafe.Sizeof(C.aoi_event{})]byte
	_ [unsafe.Sizeof(C.aoi_event{}) - unsafe.Sizeof(Event{})]byte
	_ [unsafe.Sizeof(Move{}) - unsafe.Sizeof(C.aoi_move_op{})]byte
	_ [unsafe.Sizeof(C.aoi_move_op{}) - unsafe.Sizeof(Move{})]byte
)

// segment is the Go state of one delivery segment, which its cgo.Handle
// names. Only the goroutine that won `busy` touches the rest.
type segment struct {
	busy     int32
	index    C.unsigned
	fn       DeliverFunc
	panicked bool
	value    interface{} // the first panic's value
	handle   cgo.Handle
}

// openWorlds counts the worlds not yet destroyed, for the tests.
var openWorlds int64

// World is one aoi_world. Its methods may be called from any goroutine,
// one at a time (else ErrBusy), but for DeliverSegment (see there).
type World struct {
	// Host calls hold mu for writing, deliveries for reading; both only
	// try, so a call that would wait returns ErrBusy instead (a callback
	// that calls into its world would otherwise deadlock).
	mu       sync.RWMutex
	c        C.uintptr_t // the aoi_world; 0 once closed
	pool     *Pool       // kept alive (and finalized after) while w lives
	segments []*segment
}

// New creates a world (aoi_create). Close it when done; a finalizer
// closes a World that is dropped unclosed.
func New(cfg Config) (*World, error) {
	var cc C.aoi_config
	C.aoi_config_default(&cc)
	cc.run = C.aoi_run(cfg.Run)
	cc.threads = C.unsigned(cfg.Threads)
	cc.shards = C.unsigned(cfg.Shards)
	if cfg.MinX != 0 || cfg.MinY != 0 || cfg.MaxX != 0 || cfg.MaxY != 0 {
		cc.min_x, cc.min_y = C.float(cfg.MinX), C.float(cfg.MinY)
		cc.max_x, cc.max_y = C.float(cfg.MaxX), C.float(cfg.MaxY)
	}
	if cfg.MaxRadius != 0 {
		cc.max_radius = C.float(cfg.MaxRadius)
	}
	cc.hysteresis = C.float(cfg.Hysteresis)
	if cfg.NoMoveEvents {
		cc.move_events = 0
	}
	cc.shape = C.aoi_shape(cfg.Shape)
	if cfg.CellSize != 0 {
		cc.cell_size = C.float(cfg.CellSize)
	}
	switch {
	case cfg.RebalanceInterval < 0:
		cc.rebalance_interval = 0
	case cfg.RebalanceInterval > 0:
		cc.rebalance_interval = C.unsigned(cfg.RebalanceInterval)
	}
	if len(cfg.MoveBands) > C.AOI_MAX_MOVE_BANDS {
		return nil, ErrInvalid
	}
	for i, b := range cfg.MoveBands {
		cc.move_bands[i].distance = C.float(b.Distance)
		cc.move_bands[i].period = C.uint32_t(b.Period)
	}
	cc.move_band_count = C.unsigned(len(cfg.MoveBands))
	if cfg.PinThreads {
		cc.pin_threads = 1
	}
	if cfg.MeasureCPU {
		cc.measure_cpu = 1
	}
	var rc C.int
	var pool C.uintptr_t
	if cfg.Pool != nil {
		if cfg.Run == RunOwn {
			cc.run = C.AOI_RUN_POOL
		}
		// Held through aoi_create, so that Pool.Close cannot run meanwhile.
		cfg.Pool.mu.Lock()
		defer cfg.Pool.mu.Unlock()
		pool = cfg.Pool.c
		if pool == 0 {
			return nil, ErrClosed
		}
	}
	cw := C.aoi_go_create(&cc, pool, &rc)
	if rc != 0 {
		return nil, check(rc)
	}
	w := &World{c: cw, pool: cfg.Pool}
	n := int(C.aoi_go_segments(cw))
	w.segments = make([]*segment, n)
	for i := range w.segments {
		s := &segment{index: C.unsigned(i)}
		s.handle = cgo.NewHandle(s)
		w.segments[i] = s
	}
	atomic.AddInt64(&openWorlds, 1)
	runtime.SetFinalizer(w, (*World).Close)
	return w, nil
}

// host takes the world for one host call: nil, ErrBusy or ErrClosed.
// On nil the caller must w.mu.Unlock().
func (w *World) host() error {
	if !w.mu.TryLock() {
		return ErrBusy
	}
	if w.c == 0 {
		w.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Close destroys the world (aoi_destroy), undelivered events included.
// It returns ErrBusy while a call or delivery runs (then it frees
// nothing); after the first success, later calls return nil.
func (w *World) Close() error {
	if !w.mu.TryLock() {
		return ErrBusy
	}
	defer w.mu.Unlock()
	if w.c == 0 {
		return nil
	}
	if err := check(C.aoi_go_destroy(w.c)); err != nil {
		return err
	}
	w.c = 0
	w.pool = nil
	atomic.AddInt64(&openWorlds, -1)
	for _, s := range w.segments {
		s.handle.Delete()
	}
	runtime.SetFinalizer(w, nil)
	return nil
}

// Add adds an entity (aoi_add); watchers see it at the next Tick.
func (w *World) Add(e Entity) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_add(w.c, C.uint64_t(e.ID), C.uint64_t(e.Tag),
		C.float(e.X), C.float(e.Y), C.float(e.Radius), C.unsigned(e.Flags),
		C.uint32_t(e.Layers), C.uint32_t(e.Interest)))
}

// Move sets the position of a live entity (aoi_move).
func (w *World) Move(id uint64, x, y float32) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_move(w.c, C.uint64_t(id), C.float(x), C.float(y)))
}

// MoveMany moves ops[0], ops[1], ... in order (aoi_move_many), reading
// the slice in place. It stops at the first move that fails: it returns
// how many moves stood and that move's error (len(ops) and nil on
// success).
func (w *World) MoveMany(ops []Move) (int, error) {
	if err := w.host(); err != nil {
		return 0, err
	}
	defer w.mu.Unlock()
	if len(ops) == 0 {
		return 0, nil
	}
	r := C.aoi_go_move_many(w.c, (*C.aoi_move_op)(unsafe.Pointer(&ops[0])),
		C.size_t(len(ops)))
	return int(r.n), check(r.rc)
}

// SetRadius sets the view radius of a live entity.
func (w *World) SetRadius(id uint64, radius float32) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_set_radius(w.c, C.uint64_t(id), C.float(radius)))
}

// SetLayers sets the layer and interest masks of a live entity.
func (w *World) SetLayers(id uint64, layers, interest uint32) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_set_layers(w.c, C.uint64_t(id), C.uint32_t(layers),
		C.uint32_t(interest)))
}

// SetAppeal sets the appeal of a live entity: as a marker it is seen by
// every watcher within max(the watcher's radius, its appeal).
func (w *World) SetAppeal(id uint64, appeal float32) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_set_appeal(w.c, C.uint64_t(id), C.float(appeal)))
}

// SetCap sets the view cap of a live entity (0 = none).
func (w *World) SetCap(id uint64, cap uint32) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_set_cap(w.c, C.uint64_t(id), C.uint32_t(cap)))
}

// SetTag sets the tag of a live entity, from the next Tick on.
func (w *World) SetTag(id uint64, tag uint64) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_set_tag(w.c, C.uint64_t(id), C.uint64_t(tag)))
}

// Remove removes a live entity; its watchers get Leave at the next Tick.
func (w *World) Remove(id uint64) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_remove(w.c, C.uint64_t(id)))
}

// Tick applies everything submitted since the last tick and leaves the
// tick's events for delivery (aoi_tick). ErrNoMemory: see aoi.h.
func (w *World) Tick() error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_tick(w.c))
}

// TickBegin starts a tick and returns at once (aoi_tick_begin); until
// TickEnd only TickPoll, TickEnd and Close may be called (others return
// ErrBusy; Close waits for the tick).
func (w *World) TickBegin() error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_tick_begin(w.c))
}

// TickPoll reports whether the tick in flight has finished, so that
// TickEnd will not block; ErrInvalid when no tick is in flight.
func (w *World) TickPoll() (bool, error) {
	if err := w.host(); err != nil {
		return false, err
	}
	defer w.mu.Unlock()
	rc := C.aoi_go_tick_poll(w.c)
	if rc < 0 {
		return false, check(rc)
	}
	return rc == 1, nil
}

// TickEnd waits for the tick in flight and returns what Tick would have;
// ErrInvalid when no tick is in flight.
func (w *World) TickEnd() error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_tick_end(w.c))
}

// Ref names a live entity without an id lookup (aoi_ref): valid from the
// Add that made the entity until its Remove, in its own world only.
type Ref uint64

// RefOf returns the reference of live entity id.
func (w *World) RefOf(id uint64) (Ref, error) {
	if err := w.host(); err != nil {
		return 0, err
	}
	defer w.mu.Unlock()
	r := C.aoi_go_ref_of(w.c, C.uint64_t(id))
	if r.rc != 0 {
		return 0, check(r.rc)
	}
	return Ref(r.ref), nil
}

// MoveRef is Move of the entity ref names; ErrNotFound for anything but
// a live entity's reference.
func (w *World) MoveRef(ref Ref, x, y float32) error {
	if err := w.host(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return check(C.aoi_go_move_ref(w.c, C.aoi_ref(ref), C.float(x), C.float(y)))
}

// Pending appends to dst the watchers with undelivered events, ids
// ascending (aoi_pending, copied).
func (w *World) Pending(dst []uint64) ([]uint64, error) {
	if err := w.host(); err != nil {
		return dst, err
	}
	defer w.mu.Unlock()
	r := C.aoi_go_pending(w.c)
	if r.rc != 0 {
		return dst, check(r.rc)
	}
	if r.n == 0 {
		return dst, nil
	}
	return append(dst, unsafe.Slice((*uint64)(r.items), int(r.n))...), nil
}

// Drain takes every undelivered event of watcher id, oldest tick first,
// appends them to dst (a copy: aoi_drain's array is borrowed) and empties
// its outbox: delivery by id, for hosts that do not use segments.
func (w *World) Drain(id uint64, dst []Event) ([]Event, error) {
	if err := w.host(); err != nil {
		return dst, err
	}
	defer w.mu.Unlock()
	r := C.aoi_go_drain(w.c, C.uint64_t(id))
	if r.rc != 0 {
		return dst, check(r.rc)
	}
	if r.n == 0 {
		return dst, nil
	}
	return append(dst, unsafe.Slice((*Event)(r.items), int(r.n))...), nil
}

// Segments is the number of delivery segments (one per lane).
func (w *World) Segments() int { return len(w.segments) }

// Deliver delivers every segment in turn on the calling goroutine,
// calling fn once per watcher with events. A panic in fn is handled as
// DeliverSegment's: every segment is still delivered, then Deliver panics
// again with the first panic's value.
func (w *World) Deliver(fn DeliverFunc) error {
	if !w.mu.TryRLock() {
		return ErrBusy
	}
	defer w.mu.RUnlock()
	if w.c == 0 {
		return ErrClosed
	}
	var first *segment
	var err error
	for _, s := range w.segments {
		panicked, e := w.deliver(s, fn)
		if panicked && first == nil {
			first = s
		} else if panicked {
			s.value = nil
		}
		if e != nil && err == nil {
			err = e
		}
	}
	if first != nil {
		v := first.value
		first.value = nil
		panic(v)
	}
	return err
}

// DeliverSegment delivers segment seg (0 .. Segments()-1), calling fn
// once per watcher of it with events, on the calling goroutine.
// Different segments may be delivered from different goroutines at once;
// meanwhile every other call on the world returns ErrBusy, as does a
// second delivery of the same segment.
//
// A panic in fn does not unwind through the C library: it is recovered,
// the remaining watchers are still delivered to fn (each call protected
// alike), and once the segment is done DeliverSegment panics again with
// the first panic's value. The panicking watcher's events are consumed;
// every other watcher gets its events, and the world stays usable.
//
// fn must not call runtime.Goexit (nor t.FailNow or t.Fatal in a test):
// that cannot be stopped at the C boundary and would unwind C frames.
func (w *World) DeliverSegment(seg int, fn DeliverFunc) error {
	if !w.mu.TryRLock() {
		return ErrBusy
	}
	defer w.mu.RUnlock()
	if w.c == 0 {
		return ErrClosed
	}
	if seg < 0 || seg >= len(w.segments) {
		return ErrInvalid
	}
	s := w.segments[seg]
	panicked, err := w.deliver(s, fn)
	if panicked {
		v := s.value
		s.value = nil
		panic(v)
	}
	return err
}

// deliver runs aoi_deliver of one segment; the caller holds mu.RLock.
func (w *World) deliver(s *segment, fn DeliverFunc) (bool, error) {
	if fn == nil {
		return false, ErrInvalid
	}
	if !atomic.CompareAndSwapInt32(&s.busy, 0, 1) {
		return false, ErrBusy
	}
	s.fn = fn
	s.panicked = false
	rc := C.aoi_go_deliver(w.c, s.index, C.uintptr_t(s.handle))
	s.fn = nil
	panicked := s.panicked
	atomic.StoreInt32(&s.busy, 0)
	return panicked, check(rc)
}

//export aoiGoDeliver
func aoiGoDeliver(handle C.uintptr_t, watcher, tag C.uint64_t,
	events *C.aoi_event, count C.size_t) {
	s := cgo.Handle(handle).Value().(*segment)
	s.call(uint64(watcher), uint64(tag),
		unsafe.Slice((*Event)(unsafe.Pointer(events)), int(count)))
}

// call runs the callback for one watcher; a panic stops here, before the
// C frames below. `returned` tells a panic from a return also for
// panic(nil), whose recover() is nil.
func (s *segment) call(watcher, tag uint64, events []Event) {
	returned := false
	defer func() {
		if returned {
			return
		}
		v := recover()
		if !s.panicked {
			s.panicked = true
			s.value = v
		}
	}()
	s.fn(watcher, tag, events)
	returned = true
}

type idsResult = C.aoi_go_result

// appendIDs runs one query into dst's spare capacity, growing it and
// asking again when the answer does not fit.
func appendIDs(dst []uint64, q func(ids *C.uint64_t, capacity C.size_t) idsResult) ([]uint64, error) {
	for {
		n := len(dst)
		room := cap(dst) - n
		var p *C.uint64_t
		if room > 0 {
			p = (*C.uint64_t)(unsafe.Pointer(&dst[:n+1][n]))
		}
		r := q(p, C.size_t(room))
		if r.rc != 0 {
			return dst, check(r.rc)
		}
		if int(r.n) <= room {
			return dst[:n+int(r.n)], nil
		}
		grown := make([]uint64, n, n+int(r.n))
		copy(grown, dst)
		dst = grown
	}
}

// QueryCircle appends to dst the live markers within the circle
// (inclusive) whose layers meet mask, ids ascending, as of the last tick.
func (w *World) QueryCircle(x, y, radius float32, mask uint32, dst []uint64) ([]uint64, error) {
	if err := w.host(); err != nil {
		return dst, err
	}
	defer w.mu.Unlock()
	return appendIDs(dst, func(ids *C.uint64_t, capacity C.size_t) idsResult {
		return C.aoi_go_query_circle(w.c, C.float(x), C.float(y),
			C.float(radius), C.uint32_t(mask), ids, capacity)
	})
}

// View appends to dst the current view of watcher id, ids ascending.
func (w *World) View(id uint64, dst []uint64) ([]uint64, error) {
	if err := w.host(); err != nil {
		return dst, err
	}
	defer w.mu.Unlock()
	return appendIDs(dst, func(ids *C.uint64_t, capacity C.size_t) idsResult {
		return C.aoi_go_view(w.c, C.uint64_t(id), ids, capacity)
	})
}

// WatchersOf appends to dst the watchers whose view holds id, ascending.
func (w *World) WatchersOf(id uint64, dst []uint64) ([]uint64, error) {
	if err := w.host(); err != nil {
		return dst, err
	}
	defer w.mu.Unlock()
	return appendIDs(dst, func(ids *C.uint64_t, capacity C.size_t) idsResult {
		return C.aoi_go_watchers_of(w.c, C.uint64_t(id), ids, capacity)
	})
}

// Stats are the statistics of the last tick (aoi_stats).
type Stats struct {
	Tick       uint64 // ticks completed
	Threads    uint   // lanes
	Shards     uint
	Entities   uint64 // live entities after the tick
	Watchers   uint64
	Ghosts     uint64
	Handoffs   uint64
	Rebalances uint64
	Events     uint64 // events produced this tick
	TickNs     uint64
	PhaseNs    [3]uint64 // apply, exchange, compute
	WorkNs     uint64    // with Config.MeasureCPU
	SpanNs     uint64
	// Per shard, copied: owned entities and compute time.
	ShardEntities []uint32
	ShardNs       []uint64
}

// Stats returns the statistics of the last tick.
func (w *World) Stats() (Stats, error) {
	if err := w.host(); err != nil {
		return Stats{}, err
	}
	defer w.mu.Unlock()
	var cs C.aoi_stats
	if err := check(C.aoi_go_stats(w.c, &cs)); err != nil {
		return Stats{}, err
	}
	st := Stats{
		Tick: uint64(cs.tick), Threads: uint(cs.threads),
		Shards: uint(cs.shards), Entities: uint64(cs.entities),
		Watchers: uint64(cs.watchers), Ghosts: uint64(cs.ghosts),
		Handoffs: uint64(cs.handoffs), Rebalances: uint64(cs.rebalances),
		Events: uint64(cs.events), TickNs: uint64(cs.tick_ns),
		WorkNs: uint64(cs.work_ns), SpanNs: uint64(cs.span_ns),
	}
	for i := range st.PhaseNs {
		st.PhaseNs[i] = uint64(cs.phase_ns[i])
	}
	n := int(cs.shards)
	if cs.shard_entities != nil {
		st.ShardEntities = make([]uint32, n)
		copy(st.ShardEntities, unsafe.Slice((*uint32)(unsafe.Pointer(cs.shard_entities)), n))
	}
	if cs.shard_ns != nil {
		st.ShardNs = make([]uint64, n)
		copy(st.ShardNs, unsafe.Slice((*uint64)(unsafe.Pointer(cs.shard_ns)), n))
	}
	return st, nil
}

// PoolConfig mirrors aoi_pool_config; the zero value is the default.
type PoolConfig struct {
	Threads    uint // 0 = one per online core; at most 256
	PinThreads bool // Linux: bind thread i to the i-th allowed CPU
}

// Pool is a pool of threads that ticks the worlds made with
// Config.Pool (aoi_pool). Its worlds may each have their own host
// goroutine (aoi.h rule 5).
type Pool struct {
	mu sync.Mutex
	c  C.uintptr_t // the aoi_pool; 0 once closed
}

// NewPool creates a pool and starts its threads (aoi_pool_create).
func NewPool(cfg PoolConfig) (*Pool, error) {
	var cc C.aoi_pool_config
	C.aoi_pool_config_default(&cc)
	cc.threads = C.unsigned(cfg.Threads)
	if cfg.PinThreads {
		cc.pin_threads = 1
	}
	var rc C.int
	cp := C.aoi_go_pool_create(&cc, &rc)
	if rc != 0 {
		return nil, check(rc)
	}
	p := &Pool{c: cp}
	runtime.SetFinalizer(p, (*Pool).Close)
	return p, nil
}

// Threads is the pool's thread count; 0 once closed.
func (p *Pool) Threads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(C.aoi_go_pool_threads(p.c))
}

// Close stops the pool's threads (aoi_pool_destroy): ErrBusy while a
// world is on it, and then it frees nothing; nil once closed.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == 0 {
		return nil
	}
	if err := check(C.aoi_go_pool_destroy(p.c)); err != nil {
		return err
	}
	p.c = 0
	runtime.SetFinalizer(p, nil)
	return nil
}

// TickMany ticks worlds together (aoi_tick_many): each as Tick would,
// worlds on pools at once on their threads. When results is not nil
// (len(worlds) of it) it gets each world's Tick result. Returns nil, or
// the first failing world's error; refused, ticking nothing: ErrInvalid
// (a world listed twice, results of the wrong length), ErrClosed, or
// ErrBusy (a world in another call or a delivery).
func TickMany(worlds []*World, results []error) error {
	if results != nil && len(results) != len(worlds) {
		return ErrInvalid
	}
	for i, w := range worlds {
		for _, v := range worlds[:i] {
			if v == w {
				return ErrInvalid
			}
		}
	}
	handles := make([]C.uintptr_t, len(worlds))
	rcs := make([]C.int, len(worlds))
	for i, w := range worlds {
		if err := w.host(); err != nil {
			for _, v := range worlds[:i] {
				v.mu.Unlock()
			}
			return err
		}
		handles[i] = w.c
	}
	defer func() {
		for _, w := range worlds {
			w.mu.Unlock()
		}
	}()
	if len(worlds) == 0 {
		return nil
	}
	rc := C.aoi_go_tick_many(&handles[0], C.size_t(len(worlds)), &rcs[0])
	// Each result is what aoi_tick returns, 0 or ENOMEM; other codes
	// refused the call and wrote nothing.
	if results != nil && (rc == 0 || rc == C.AOI_ENOMEM) {
		for i := range results {
			results[i] = check(rcs[i])
		}
	}
	return check(rc)
}
