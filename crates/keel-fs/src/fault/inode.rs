//! File contents in `FaultFs`: the live bytes and what a crash would leave of them.

/// The bytes a crash would leave, kept cheaply: while writes only append, the durable bytes are a
/// prefix of the live ones; the first write that changes bytes below that prefix takes a copy.
#[derive(Clone, Debug)]
enum Durable {
    Prefix(usize),
    Snapshot(Vec<u8>),
}

#[derive(Clone, Debug)]
pub(super) struct Inode {
    data: Vec<u8>,
    durable: Durable,
}

impl Inode {
    pub(super) fn new() -> Inode {
        Inode {
            data: Vec::new(),
            durable: Durable::Prefix(0),
        }
    }

    /// A file whose live and durable contents are both `data` (a file in a crash image).
    pub(super) fn durable_from(data: Vec<u8>) -> Inode {
        let len = data.len();
        Inode {
            data,
            durable: Durable::Prefix(len),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.data.len()
    }

    pub(super) fn data(&self) -> &[u8] {
        &self.data
    }

    pub(super) fn durable_bytes(&self) -> Vec<u8> {
        match &self.durable {
            Durable::Prefix(len) => self.data[..*len].to_vec(),
            Durable::Snapshot(bytes) => bytes.clone(),
        }
    }

    /// Called before bytes at `from..` change: keeps the durable view intact.
    fn preserve_durable_from(&mut self, from: usize) {
        if let Durable::Prefix(len) = self.durable
            && from < len
        {
            self.durable = Durable::Snapshot(self.data[..len].to_vec());
        }
    }

    pub(super) fn write(&mut self, offset: usize, buf: &[u8]) {
        self.preserve_durable_from(offset);
        let end = offset + buf.len();
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[offset..end].copy_from_slice(buf);
    }

    pub(super) fn truncate(&mut self, len: usize) {
        self.preserve_durable_from(len);
        self.data.resize(len, 0);
    }

    pub(super) fn sync(&mut self) {
        self.durable = Durable::Prefix(self.data.len());
    }
}
