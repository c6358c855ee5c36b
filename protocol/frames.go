package protocol

// Renderings of the frames a subscriber reads most, byte for byte. The
// broker renders notifications around a publication it renders once, and
// the client takes frames that begin so by hand, sending anything else
// (escapes, spaces, another field order) to a general decoder. A sid
// needs no escaping: it holds only [0-9a-z.t-].
//
// A notification in JSON is NotePrefix, sid, NoteSeq, seq, on NATS
// NotePrev and prev, NotePublication, the publication, NoteSuffix:
//
//	{"op":"notification","sid":"…","seq":…,"prev":…,"publication":{…}}
const (
	NotePrefix      = `{"op":"notification","sid":"`
	NoteSeq         = `","seq":`
	NotePrev        = `,"prev":`
	NotePublication = `,"publication":`
	NoteSuffix      = `}`
)

// A grouped notification in JSON is GroupPrefix, then for each recipient
// GroupSid, sid, NoteSeq, seq and "}" (with commas between), then
// GroupPublication, the publication and NoteSuffix:
//
//	{"op":"notifications","to":[{"sid":"…","seq":…},…],"publication":{…}}
const (
	GroupPrefix      = `{"op":"notifications","to":[`
	GroupSid         = `{"sid":"`
	GroupPublication = `],"publication":`
)

// The same frames in CBOR (SubprotocolCBOR) are their JSON's values with
// definite lengths: a notification is CBORNotePrefix, the sid as a text
// string, CBORNoteSeq, seq as an integer, CBORNotePublication and the
// publication; a grouped one CBORGroupPrefix, an array of maps each
// CBORGroupSid, sid, CBORNoteSeq, seq, then CBORNotePublication and the
// publication.
const (
	CBORNotePrefix      = "\xa4\x62op\x6cnotification\x63sid" // a map of 4, "op": "notification", "sid"
	CBORNoteSeq         = "\x63seq"
	CBORNotePublication = "\x6bpublication"
	CBORGroupPrefix     = "\xa3\x62op\x6dnotifications\x62to" // a map of 3, "op": "notifications", "to"
	CBORGroupSid        = "\xa2\x63sid"                       // a map of 2, "sid"
)
