package task

// Messages for references carried inside values (see the gray package's
// Put): numbered apart from the main list, like MsgReleaseShared.
const (
	// MsgHold (W→D: object IDs) says the worker decoded these references
	// out of a value and now refers to them; a MsgDrop for each ends that.
	MsgHold byte = 65
	// MsgContain (W→D: parent object ID, then object IDs) says the
	// parent's value refers to these objects: they live while it does.
	MsgContain byte = 66
)
