// Plain data between a judged Rust test and the candidate's process.
//
// Both binaries of a judged suite carry this module: the judge, whose proxy of the entry point
// sends the arguments and reads the result, and the candidate, whose server takes the
// arguments, calls the implementation and sends the result back. Only the types below cross:
// integers, floats (bit-exact), bool, char, strings, vectors, slices, options, tuples, maps and
// sets of these. A frame is an 8-byte little-endian length and the encoded values.
#[allow(dead_code, unused_imports, unused_mut, clippy::all)]
mod __reflexion_wire {
    use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
    use std::fs::File;
    use std::hash::Hash;
    use std::io::{Read, Write};
    use std::os::unix::io::FromRawFd;
    use std::sync::{Mutex, OnceLock};

    /// The judge's panic message when the candidate's process ends before it replies.
    pub const ENDED: &str = "reflexion-judge: the candidate's process ended before replying";
    /// The start of the judge's panic message when a reply is not of the declared type.
    pub const GARBLED: &str = "reflexion-judge: the candidate's reply is not a";
    const FRAME_LIMIT: u64 = 1 << 30;

    pub struct Reader<'a> {
        data: &'a [u8],
        at: usize,
    }

    type Got<T> = Result<T, ()>;

    impl<'a> Reader<'a> {
        pub fn new(data: &'a [u8]) -> Self {
            Reader { data, at: 0 }
        }

        pub fn done(&self) -> bool {
            self.at == self.data.len()
        }

        fn tag(&mut self, want: u8) -> Got<()> {
            match self.data.get(self.at) {
                Some(&b) if b == want => {
                    self.at += 1;
                    Ok(())
                }
                _ => Err(()),
            }
        }

        fn peek(&self) -> Option<u8> {
            self.data.get(self.at).copied()
        }

        /// The text up to the next `;`, which is consumed.
        fn field(&mut self) -> Got<&'a str> {
            let rest = &self.data[self.at..];
            let end = rest.iter().position(|&b| b == b';').ok_or(())?;
            self.at += end + 1;
            std::str::from_utf8(&rest[..end]).map_err(|_| ())
        }

        /// A count of items that follow; each takes at least one byte.
        fn count(&mut self) -> Got<usize> {
            let n: usize = self.field()?.parse().map_err(|_| ())?;
            if n > self.data.len() - self.at {
                return Err(());
            }
            Ok(n)
        }

        fn bytes(&mut self, n: usize) -> Got<&'a [u8]> {
            if n > self.data.len() - self.at {
                return Err(());
            }
            let out = &self.data[self.at..self.at + n];
            self.at += n;
            Ok(out)
        }
    }

    pub trait Put {
        fn put(&self, out: &mut Vec<u8>);
    }

    pub trait Take: Sized {
        fn take(r: &mut Reader) -> Got<Self>;
    }

    fn head(out: &mut Vec<u8>, tag: u8, text: &str) {
        out.push(tag);
        out.extend_from_slice(text.as_bytes());
        out.push(b';');
    }

    macro_rules! integers {
        ($($t:ty),*) => {$(
            impl Put for $t {
                fn put(&self, out: &mut Vec<u8>) {
                    head(out, b'i', &self.to_string());
                }
            }
            impl Take for $t {
                fn take(r: &mut Reader) -> Got<Self> {
                    r.tag(b'i')?;
                    r.field()?.parse().map_err(|_| ())
                }
            }
        )*};
    }
    integers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

    macro_rules! floats {
        ($($t:ty => $bits:ty),*) => {$(
            impl Put for $t {
                fn put(&self, out: &mut Vec<u8>) {
                    head(out, b'f', &format!("{:x}", self.to_bits()));
                }
            }
            impl Take for $t {
                fn take(r: &mut Reader) -> Got<Self> {
                    r.tag(b'f')?;
                    let bits = <$bits>::from_str_radix(r.field()?, 16).map_err(|_| ())?;
                    Ok(<$t>::from_bits(bits))
                }
            }
        )*};
    }
    floats!(f32 => u32, f64 => u64);

    impl Put for bool {
        fn put(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(if *self { b"b1" } else { b"b0" });
        }
    }
    impl Take for bool {
        fn take(r: &mut Reader) -> Got<Self> {
            r.tag(b'b')?;
            match r.bytes(1)? {
                b"1" => Ok(true),
                b"0" => Ok(false),
                _ => Err(()),
            }
        }
    }

    impl Put for char {
        fn put(&self, out: &mut Vec<u8>) {
            head(out, b'c', &(*self as u32).to_string());
        }
    }
    impl Take for char {
        fn take(r: &mut Reader) -> Got<Self> {
            r.tag(b'c')?;
            let code: u32 = r.field()?.parse().map_err(|_| ())?;
            char::from_u32(code).ok_or(())
        }
    }

    impl Put for str {
        fn put(&self, out: &mut Vec<u8>) {
            head(out, b's', &self.len().to_string());
            out.extend_from_slice(self.as_bytes());
        }
    }
    impl Put for String {
        fn put(&self, out: &mut Vec<u8>) {
            self.as_str().put(out);
        }
    }
    impl Take for String {
        fn take(r: &mut Reader) -> Got<Self> {
            r.tag(b's')?;
            let n: usize = r.field()?.parse().map_err(|_| ())?;
            let bytes = r.bytes(n)?;
            String::from_utf8(bytes.to_vec()).map_err(|_| ())
        }
    }

    impl<T: Put + ?Sized> Put for &T {
        fn put(&self, out: &mut Vec<u8>) {
            (**self).put(out);
        }
    }
    impl<T: Put + ?Sized> Put for &mut T {
        fn put(&self, out: &mut Vec<u8>) {
            (**self).put(out);
        }
    }
    impl<T: Put + ?Sized> Put for Box<T> {
        fn put(&self, out: &mut Vec<u8>) {
            (**self).put(out);
        }
    }
    impl<T: Take> Take for Box<T> {
        fn take(r: &mut Reader) -> Got<Self> {
            T::take(r).map(Box::new)
        }
    }

    fn put_items<'a, T: Put + 'a>(out: &mut Vec<u8>, n: usize, items: impl Iterator<Item = &'a T>) {
        head(out, b'l', &n.to_string());
        for item in items {
            item.put(out);
        }
    }

    fn take_items<T: Take, C: FromIterator<T>>(r: &mut Reader) -> Got<C> {
        r.tag(b'l')?;
        let n = r.count()?;
        (0..n).map(|_| T::take(r)).collect()
    }

    impl<T: Put> Put for [T] {
        fn put(&self, out: &mut Vec<u8>) {
            put_items(out, self.len(), self.iter());
        }
    }
    impl<T: Put> Put for Vec<T> {
        fn put(&self, out: &mut Vec<u8>) {
            put_items(out, self.len(), self.iter());
        }
    }
    impl<T: Take> Take for Vec<T> {
        fn take(r: &mut Reader) -> Got<Self> {
            take_items(r)
        }
    }
    macro_rules! sequences {
        ($($c:ident $(+ $bound:ident)*),*) => {$(
            impl<T: Put> Put for $c<T> {
                fn put(&self, out: &mut Vec<u8>) {
                    put_items(out, self.len(), self.iter());
                }
            }
            impl<T: Take $(+ $bound)*> Take for $c<T> {
                fn take(r: &mut Reader) -> Got<Self> {
                    take_items(r)
                }
            }
        )*};
    }
    sequences!(VecDeque, HashSet + Eq + Hash, BTreeSet + Ord);

    fn put_pairs<'a, K: Put + 'a, V: Put + 'a>(
        out: &mut Vec<u8>,
        n: usize,
        pairs: impl Iterator<Item = (&'a K, &'a V)>,
    ) {
        head(out, b'm', &n.to_string());
        for (k, v) in pairs {
            k.put(out);
            v.put(out);
        }
    }

    fn take_pairs<K: Take, V: Take, C: FromIterator<(K, V)>>(r: &mut Reader) -> Got<C> {
        r.tag(b'm')?;
        let n = r.count()?;
        (0..n).map(|_| Ok((K::take(r)?, V::take(r)?))).collect()
    }

    macro_rules! maps {
        ($($c:ident $(+ $bound:ident)*),*) => {$(
            impl<K: Put, V: Put> Put for $c<K, V> {
                fn put(&self, out: &mut Vec<u8>) {
                    put_pairs(out, self.len(), self.iter());
                }
            }
            impl<K: Take $(+ $bound)*, V: Take> Take for $c<K, V> {
                fn take(r: &mut Reader) -> Got<Self> {
                    take_pairs(r)
                }
            }
        )*};
    }
    maps!(HashMap + Eq + Hash, BTreeMap + Ord);

    impl<T: Put> Put for Option<T> {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                None => out.push(b'n'),
                Some(value) => {
                    out.push(b'o');
                    value.put(out);
                }
            }
        }
    }
    impl<T: Take> Take for Option<T> {
        fn take(r: &mut Reader) -> Got<Self> {
            match r.peek() {
                Some(b'n') => r.tag(b'n').map(|_| None),
                Some(b'o') => {
                    r.tag(b'o')?;
                    T::take(r).map(Some)
                }
                _ => Err(()),
            }
        }
    }

    macro_rules! tuples {
        ($(($n:expr; $($t:ident $i:tt),*)),*) => {$(
            impl<$($t: Put),*> Put for ($($t,)*) {
                fn put(&self, out: &mut Vec<u8>) {
                    head(out, b't', stringify!($n));
                    $(self.$i.put(out);)*
                }
            }
            impl<$($t: Take),*> Take for ($($t,)*) {
                fn take(r: &mut Reader) -> Got<Self> {
                    r.tag(b't')?;
                    if r.field()? != stringify!($n) {
                        return Err(());
                    }
                    Ok(($($t::take(r)?,)*))
                }
            }
        )*};
    }
    tuples!(
        (0;),
        (1; A 0),
        (2; A 0, B 1),
        (3; A 0, B 1, C 2),
        (4; A 0, B 1, C 2, D 3),
        (5; A 0, B 1, C 2, D 3, E 4),
        (6; A 0, B 1, C 2, D 3, E 4, F 5),
        (7; A 0, B 1, C 2, D 3, E 4, F 5, G 6),
        (8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
    );

    // ---- the channel ------------------------------------------------------------------------

    fn channel() -> (File, File) {
        let fds = std::env::var("REFLEXION_CHANNEL_FDS").unwrap_or_default();
        let mut parts = fds.split(',').filter_map(|p| p.parse::<i32>().ok());
        match (parts.next(), parts.next()) {
            // SAFETY: the sandbox passed these two pipe ends to this process for this use only.
            (Some(r), Some(w)) => unsafe { (File::from_raw_fd(r), File::from_raw_fd(w)) },
            _ => {
                eprintln!("reflexion-judge: no channel to the other process");
                std::process::exit(96)
            }
        }
    }

    fn read_frame(input: &mut File) -> Option<Vec<u8>> {
        let mut size = [0u8; 8];
        input.read_exact(&mut size).ok()?;
        let n = u64::from_le_bytes(size);
        if n > FRAME_LIMIT {
            return None;
        }
        let mut data = Vec::new();
        input.take(n).read_to_end(&mut data).ok()?;
        if data.len() as u64 != n {
            return None;
        }
        Some(data)
    }

    fn write_frame(output: &mut File, data: &[u8]) -> bool {
        let size = (data.len() as u64).to_le_bytes();
        output.write_all(&size).is_ok() && output.write_all(data).is_ok()
    }

    /// The judge: no other process of this uid may read its memory or descriptors.
    pub fn guard() {
        extern "C" {
            fn prctl(option: i32, ...) -> i32;
        }
        // SAFETY: PR_SET_DUMPABLE (4) with 0 only changes this process's dumpable flag.
        unsafe {
            prctl(4, 0usize, 0usize, 0usize, 0usize);
        }
    }

    static CALLS: OnceLock<Mutex<(File, File)>> = OnceLock::new();

    /// The judge's side of one call: send the encoded arguments, return the encoded result.
    pub fn call(request: &[u8]) -> Vec<u8> {
        let lock = CALLS.get_or_init(|| Mutex::new(channel()));
        let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (input, output) = &mut *guard;
        if !write_frame(output, request) {
            panic!("{}", ENDED);
        }
        match read_frame(input) {
            Some(reply) => reply,
            None => panic!("{}", ENDED),
        }
    }

    /// Decode a whole reply as a `T` (`what` names the type in the panic message).
    pub fn reply<T: Take>(data: &[u8], what: &str) -> T {
        let mut r = Reader::new(data);
        match T::take(&mut r) {
            Ok(value) if r.done() => value,
            _ => panic!("{} {}", GARBLED, what),
        }
    }

    /// The candidate's side: answer calls until the judge closes the channel.
    pub fn serve(mut answer: impl FnMut(&mut Reader, &mut Vec<u8>) -> Got<()>) {
        let (mut input, mut output) = channel();
        while let Some(frame) = read_frame(&mut input) {
            let mut reader = Reader::new(&frame);
            let mut out = Vec::new();
            if answer(&mut reader, &mut out).is_err() || !reader.done() {
                eprintln!("reflexion-judge: a call's arguments could not be read");
                std::process::exit(98);
            }
            if !write_frame(&mut output, &out) {
                return;
            }
        }
    }

    pub fn arg<T: Take>(r: &mut Reader) -> Got<T> {
        T::take(r)
    }
}
