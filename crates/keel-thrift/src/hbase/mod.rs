//! The `Hbase` service of HBase's Thrift1 gateway (`Hbase.thrift`): its structs, and its calls
//! and replies on top of [`crate::Decoder`] / [`crate::Encoder`], for the server and the client
//! alike. `docs/thrift.md` lists what each call carries.

mod calls;

/// Most elements a collection is given room for before its elements are decoded: its length
/// comes from the wire, and room for a lie must not be allocated up front.
const PREALLOCATE: usize = 1024;
mod replies;
mod structs;

pub use calls::{
    Call, CallError, Declared, Request, declared_exceptions, decode_call, decode_request,
    prefix_stop_row,
};
pub use replies::{
    DecodedReply, HbaseError, INTERNAL_ERROR, Reply, UNKNOWN_METHOD, decode_reply,
    encode_application_exception, encode_reply,
};
pub use structs::{
    BatchMutation, ColumnDescriptor, Mutation, TAccessControlEntity, TAppend, TCell, TColumn,
    TIncrement, TRegionInfo, TRowResult, TScan, ThriftStruct,
};
