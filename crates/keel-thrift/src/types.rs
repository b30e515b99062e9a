//! The Thrift type system as the wire sees it, and the decoder's limits.

/// A field or element type (the binary protocol's ids; the compact protocol maps its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TType {
    /// `bool`.
    Bool,
    /// `byte` / `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `double`.
    Double,
    /// `string` / `binary`.
    Binary,
    /// A struct (also a union or exception).
    Struct,
    /// `map<K, V>`.
    Map,
    /// `set<T>`.
    Set,
    /// `list<T>`.
    List,
}

impl TType {
    /// The binary protocol's type id.
    pub fn binary_id(self) -> u8 {
        match self {
            TType::Bool => 2,
            TType::I8 => 3,
            TType::Double => 4,
            TType::I16 => 6,
            TType::I32 => 8,
            TType::I64 => 10,
            TType::Binary => 11,
            TType::Struct => 12,
            TType::Map => 13,
            TType::Set => 14,
            TType::List => 15,
        }
    }

    /// The type of a binary protocol id (`None` for 0, STOP, and unknown ids).
    pub fn from_binary_id(id: u8) -> Option<TType> {
        Some(match id {
            2 => TType::Bool,
            3 => TType::I8,
            4 => TType::Double,
            6 => TType::I16,
            8 => TType::I32,
            10 => TType::I64,
            11 => TType::Binary,
            12 => TType::Struct,
            13 => TType::Map,
            14 => TType::Set,
            15 => TType::List,
            _ => return None,
        })
    }

    /// The fewest bytes one value of this type takes on the wire (in either protocol), which
    /// bounds how many elements a container can honestly declare.
    pub(crate) fn min_wire_len(self) -> usize {
        match self {
            TType::Double => 8,
            _ => 1,
        }
    }
}

/// A message's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// A request expecting a reply.
    Call,
    /// A reply.
    Reply,
    /// A `TApplicationException` instead of a reply.
    Exception,
    /// A request expecting none.
    Oneway,
}

impl MessageType {
    pub(crate) fn id(self) -> u8 {
        match self {
            MessageType::Call => 1,
            MessageType::Reply => 2,
            MessageType::Exception => 3,
            MessageType::Oneway => 4,
        }
    }

    pub(crate) fn from_id(id: u8) -> Option<MessageType> {
        Some(match id {
            1 => MessageType::Call,
            2 => MessageType::Reply,
            3 => MessageType::Exception,
            4 => MessageType::Oneway,
            _ => return None,
        })
    }
}

/// A message header: the method, the kind and the sequence id (happybase always sends 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHeader {
    /// The method name.
    pub name: String,
    /// Call, reply, exception or oneway.
    pub kind: MessageType,
    /// Echoed in the reply.
    pub seqid: i32,
}

/// A field header inside a struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldHeader {
    /// The field's type.
    pub ttype: TType,
    /// The field id.
    pub id: i16,
}

/// What a decoder accepts at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest string or binary value (16 MiB by default, the Rust `thrift` crate's frame
    /// limit; HBase clients send values of 1 MiB and more).
    pub max_string: usize,
    /// Most elements in one container (bounded anyway by the bytes left in the buffer).
    pub max_container: usize,
    /// Deepest nesting of structs and containers (64, Thrift's default recursion limit).
    pub max_depth: usize,
    /// Most bytes the decoded message may take in memory, estimated as it is decoded (see
    /// [`crate::DECODED_STRUCT_COST`]): a frame of empty structs is small on the wire and huge
    /// decoded, so a server bounds this, not only the frame (64 MiB by default).
    pub max_decoded: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_string: 16 << 20,
            max_container: 16 << 20,
            max_depth: 64,
            max_decoded: 64 << 20,
        }
    }
}
