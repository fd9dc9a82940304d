//! `ScopedString`: UTF-8 text in a scope, and [`format_in!`](crate::format_in).

use std::alloc::Layout;
use std::convert::Infallible;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

use allocator_api2::alloc::AllocError;

use super::ScopedVec;
use super::error_behavior::{ErrorBehavior, Refusal, infallible};
use crate::error::{AllocFailure, FailureReason, allocation_panic};
use crate::scope::{Scope, ScopeRef};

/// A growable UTF-8 string in the memory of the scope `'s`: what
/// `String` is to `Vec<u8>`, [`ScopedString`] is to [`ScopedVec<u8>`].
///
/// It grows in place while it is the newest allocation of the innermost
/// scope, like [`ScopedVec`]. [`format_in!`](crate::format_in) formats into
/// one.
///
/// ```
/// use std::fmt::Write;
///
/// arena::scope(|s| {
///     let mut report = s.string_from("rows:");
///     for row in 0..3 {
///         write!(report, " {row}").unwrap();
///     }
///     report.push('.');
///     assert_eq!(report, "rows: 0 1 2.");
///     assert_eq!(report.len(), 12);
/// });
/// ```
///
/// # Panics
/// Growing panics, with the sizes involved, when the arena cannot provide
/// the memory; [`try_reserve`](ScopedString::try_reserve) and
/// [`try_push_str`](ScopedString::try_push_str) return that message's
/// [`AllocFailure`] instead.
pub struct ScopedString<'s> {
    /// Always valid UTF-8: every method that adds bytes adds a whole `str`.
    bytes: ScopedVec<'s, u8>,
}

impl<'s> Scope<'s> {
    /// An empty [`ScopedString`] in this scope; it allocates on the first push.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut name = s.string();
    ///     name.push_str("heat");
    ///     name.push('2');
    ///     assert_eq!(name, "heat2");
    /// });
    /// ```
    pub fn string(&self) -> ScopedString<'s> {
        ScopedString { bytes: self.vec() }
    }

    /// A [`ScopedString`] in this scope holding a copy of `text`.
    ///
    /// ```
    /// arena::scope(|s| assert_eq!(s.string_from("x = 1"), "x = 1"));
    /// ```
    ///
    /// # Panics
    /// If the arena cannot provide `text.len()` bytes.
    #[track_caller]
    pub fn string_from(&self, text: &str) -> ScopedString<'s> {
        let mut string = self.string();
        string.push_str_for("string_from", text);
        string
    }

    /// A copy of `text` in this scope, as a plain `&str` that lives as long
    /// as the scope (the counterpart of [`copy_slice`](Scope::copy_slice)).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut names = Vec::new();
    ///     for i in 0..3 {
    ///         let name = format!("col{i}");
    ///         names.push(s.copy_str(&name)); // outlives `name`
    ///     }
    ///     assert_eq!(names, ["col0", "col1", "col2"]);
    /// });
    /// ```
    ///
    /// # Panics
    /// If the arena cannot provide `text.len()` bytes.
    #[track_caller]
    pub fn copy_str(&self, text: &str) -> &'s str {
        self.string_from(text).into_str()
    }
}

impl<'s> ScopedString<'s> {
    /// Appends `text`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut line = s.string();
    ///     line.push_str("a");
    ///     line.push_str("bc");
    ///     assert_eq!(line, "abc");
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails (see [`ScopedVec::reserve`]).
    #[inline]
    #[track_caller]
    pub fn push_str(&mut self, text: &str) {
        self.push_str_for("push_str", text);
    }

    /// [`push_str`](ScopedString::push_str) for the method `what` the user
    /// called, which a failed growth's panic names.
    #[inline(always)]
    #[track_caller]
    fn push_str_for(&mut self, what: &'static str, text: &str) {
        infallible(self.generic_push_str::<Infallible>(what, text));
    }

    /// [`push_str`](ScopedString::push_str) and
    /// [`try_push_str`](ScopedString::try_push_str), on behalf of the method
    /// `what` the user called, which a failed growth's panic names. A failed
    /// growth leaves the string as it was.
    #[inline(always)]
    #[track_caller]
    fn generic_push_str<E: ErrorBehavior>(&mut self, what: &'static str, text: &str) -> Result<(), E> {
        if self.capacity() - self.len() < text.len() && self.bytes.try_reserve(text.len()).is_err() {
            let refusal =
                StringGrowthRefusal { scope: self.scope().by_value(), what, len: self.len(), additional: text.len() };
            return Err(E::refused(refusal));
        }
        self.bytes.extend_from_slice_copy(text.as_bytes());
        Ok(())
    }

    /// Appends `text`, or returns an [`AllocFailure`] (and leaves the string
    /// as it was) if growing fails.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut line = s.string();
    ///     assert!(line.try_push_str("ok").is_ok());
    ///     assert_eq!(line, "ok");
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocFailure`] if the length overflows
    /// ([`CapacityOverflow`](crate::FailureReason::CapacityOverflow)) or the
    /// arena cannot provide the memory (the reason says why); its text names
    /// the string's length and the bytes added.
    pub fn try_push_str(&mut self, text: &str) -> Result<(), AllocFailure> {
        self.generic_push_str("try_push_str", text)
    }

    /// Appends `c`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut word = s.string();
    ///     word.push('é');
    ///     assert_eq!((word.len(), word.as_str()), (2, "é"));
    /// });
    /// ```
    ///
    /// # Panics
    /// If growing fails (see [`ScopedVec::reserve`]).
    #[inline]
    #[track_caller]
    pub fn push(&mut self, c: char) {
        self.push_str_for("push", c.encode_utf8(&mut [0; 4]));
    }

    /// Removes and returns the last character.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut word = s.string_from("né");
    ///     assert_eq!(word.pop(), Some('é'));
    ///     assert_eq!(word, "n");
    /// });
    /// ```
    pub fn pop(&mut self) -> Option<char> {
        let c = self.as_str().chars().next_back()?;
        self.bytes.truncate(self.bytes.len() - c.len_utf8());
        Some(c)
    }

    /// Shortens the string to `new_len` bytes; no effect if it is not longer.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut word = s.string_from("scoped");
    ///     word.truncate(5);
    ///     assert_eq!(word, "scope");
    /// });
    /// ```
    ///
    /// # Panics
    /// If `new_len` is inside a character, not at a character boundary.
    #[track_caller]
    pub fn truncate(&mut self, new_len: usize) {
        if new_len < self.len() {
            assert!(
                self.is_char_boundary(new_len),
                "cannot truncate a string of {} bytes to {new_len}: byte {new_len} is inside a character",
                self.len()
            );
            self.bytes.truncate(new_len);
        }
    }

    /// Removes every character; the capacity stays.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut line = s.string_from("old");
    ///     line.clear();
    ///     assert!(line.is_empty());
    /// });
    /// ```
    pub fn clear(&mut self) {
        self.bytes.clear();
    }

    /// Makes room for `additional` more bytes.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut line = s.string();
    ///     line.reserve(100);
    ///     assert!(line.capacity() >= 100);
    /// });
    /// ```
    ///
    /// # Panics
    /// If the size overflows or the arena cannot provide the memory.
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        self.bytes.reserve(additional);
    }

    /// Makes room for `additional` more bytes.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut line = s.string();
    ///     assert!(line.try_reserve(100).is_ok());
    ///     assert!(line.try_reserve(usize::MAX).is_err());
    /// });
    /// ```
    ///
    /// # Errors
    /// [`AllocFailure`] where [`ScopedVec::try_reserve`] errs, for the same
    /// reasons; the string is left as it was.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), AllocFailure> {
        self.bytes.try_reserve(additional)
    }

    /// Bytes that fit without growing.
    ///
    /// ```
    /// arena::scope(|s| assert_eq!(s.string().capacity(), 0));
    /// ```
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The text.
    ///
    /// ```
    /// arena::scope(|s| assert_eq!(s.string_from("abc").as_str(), "abc"));
    /// ```
    pub fn as_str(&self) -> &str {
        // SAFETY: `bytes` only ever receives whole `str`s and is only
        // shortened at character boundaries (the field's invariant).
        unsafe { std::str::from_utf8_unchecked(self.bytes.as_slice()) }
    }

    /// The text, mutably (for `make_ascii_uppercase` and the like).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let mut word = s.string_from("loud");
    ///     word.as_mut_str().make_ascii_uppercase();
    ///     assert_eq!(word, "LOUD");
    /// });
    /// ```
    pub fn as_mut_str(&mut self) -> &mut str {
        // SAFETY: as in `as_str`; a `&mut str` can only be changed into
        // valid UTF-8 by safe code.
        unsafe { std::str::from_utf8_unchecked_mut(self.bytes.as_mut_slice()) }
    }

    /// The text as a plain `&str` that lives as long as the scope; the
    /// string's spare capacity is left unused.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let label: &str = arena::format_in!(s, "step {}", 7).into_str();
    ///     assert_eq!(label, "step 7");
    /// });
    /// ```
    pub fn into_str(self) -> &'s str {
        let bytes = self.bytes.into_array().into_slice();
        // SAFETY: the bytes are the string's, valid UTF-8 (the field's invariant).
        unsafe { std::str::from_utf8_unchecked_mut(bytes) }
    }

    /// The bytes, as a vector in the same scope.
    ///
    /// ```
    /// arena::scope(|s| assert_eq!(s.string_from("hi").into_bytes(), [b'h', b'i']));
    /// ```
    pub fn into_bytes(self) -> ScopedVec<'s, u8> {
        self.bytes
    }

    /// The scope this string allocates from.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let a = s.string_from("a");
    ///     let b = a.scope().string_from("b"); // in the same scope as `a`
    ///     assert_eq!(b, "b");
    /// });
    /// ```
    pub fn scope(&self) -> &'s Scope<'s> {
        self.bytes.scope()
    }
}

impl Clone for ScopedString<'_> {
    /// A copy in the same scope.
    #[track_caller]
    fn clone(&self) -> Self {
        self.scope().string_from(self)
    }
}

impl Deref for ScopedString<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl DerefMut for ScopedString<'_> {
    fn deref_mut(&mut self) -> &mut str {
        self.as_mut_str()
    }
}

impl AsRef<str> for ScopedString<'_> {
    fn as_ref(&self) -> &str {
        self
    }
}

impl AsRef<[u8]> for ScopedString<'_> {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Write for ScopedString<'_> {
    /// Appends `text`; an arena that cannot grow the string is an error
    /// (so `write!` returns `Err` instead of panicking).
    fn write_str(&mut self, text: &str) -> fmt::Result {
        // `fmt::Error` carries no reason, so none is worked out.
        self.generic_push_str::<AllocError>("write_str", text).map_err(|AllocError| fmt::Error)
    }

    fn write_char(&mut self, c: char) -> fmt::Result {
        self.write_str(c.encode_utf8(&mut [0; 4]))
    }
}

impl fmt::Display for ScopedString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for ScopedString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for ScopedString<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ScopedString<'_> {}

impl PartialEq<str> for ScopedString<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ScopedString<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for ScopedString<'_> {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<ScopedString<'_>> for str {
    fn eq(&self, other: &ScopedString<'_>) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<ScopedString<'_>> for &str {
    fn eq(&self, other: &ScopedString<'_>) -> bool {
        *self == other.as_str()
    }
}

impl PartialOrd for ScopedString<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ScopedString<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for ScopedString<'_> {
    /// Hashes as the `str` does, so a `ScopedString` key finds a `&str` one.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl Extend<char> for ScopedString<'_> {
    #[track_caller]
    fn extend<I: IntoIterator<Item = char>>(&mut self, chars: I) {
        for c in chars {
            self.push(c);
        }
    }
}

impl<'a> Extend<&'a str> for ScopedString<'_> {
    #[track_caller]
    fn extend<I: IntoIterator<Item = &'a str>>(&mut self, texts: I) {
        for text in texts {
            self.push_str(text);
        }
    }
}

/// Formats into a [`ScopedString`] in the given scope, as `format!` does
/// into a `String`: `format_in!(s, "{x:.2} at {i}")`. Nothing is allocated
/// outside the scope.
///
/// ```
/// arena::scope(|s| {
///     let (step, residual) = (12, 0.00314);
///     let line = arena::format_in!(s, "step {step}: residual {residual:.1e}");
///     assert_eq!(line, "step 12: residual 3.1e-3");
/// });
/// ```
///
/// # Panics
/// If the arena cannot provide the memory, or a `Display` implementation
/// returns an error (as `format!` panics).
#[macro_export]
macro_rules! format_in {
    ($scope:expr, $($arg:tt)*) => {
        $crate::ScopedString::format_args_in($scope, ::std::format_args!($($arg)*))
    };
}

impl<'s> ScopedString<'s> {
    /// What [`format_in!`](crate::format_in) expands to: `arguments`,
    /// formatted into a new string in `scope`.
    ///
    /// ```
    /// arena::scope(|s| {
    ///     let text = arena::ScopedString::format_args_in(s, format_args!("{}-{}", 1, 2));
    ///     assert_eq!(text, "1-2");
    /// });
    /// ```
    ///
    /// # Panics
    /// If the arena cannot provide the memory, or a `Display` implementation
    /// returns an error.
    #[track_caller]
    pub fn format_args_in(scope: &Scope<'s>, arguments: fmt::Arguments<'_>) -> ScopedString<'s> {
        let mut out = scope.string();
        if let Some(text) = arguments.as_str() {
            out.push_str_for("format_in!", text);
        } else if fmt::Write::write_fmt(&mut out, arguments).is_err() {
            format_failed(&out);
        }
        out
    }
}

/// A string of `len` bytes that could not grow by `additional` for the
/// method `what`.
struct StringGrowthRefusal {
    scope: ScopeRef,
    what: &'static str,
    len: usize,
    additional: usize,
}

impl Refusal for StringGrowthRefusal {
    #[inline(always)]
    fn failure(self) -> AllocFailure {
        growth_failure(self.scope, self.what, self.len, self.additional)
    }

    #[inline(always)]
    fn panic(self) -> ! {
        growth_failed(self.scope, self.what, self.len, self.additional)
    }
}

/// The failure of a string of `len` bytes that could not grow by
/// `additional` for the method `what`, naming the reason.
#[cold]
#[inline(never)]
fn growth_failure(scope: ScopeRef, what: &'static str, len: usize, additional: usize) -> AllocFailure {
    let reason = match len.checked_add(additional).map(Layout::array::<u8>) {
        None | Some(Err(_)) => FailureReason::CapacityOverflow,
        Some(Ok(layout)) => scope.failure_reason(layout),
    };
    AllocFailure::string_growth(what, len, additional, reason)
}

/// Panics for a string that could not grow (see [`growth_failure`]).
#[cold]
#[inline(never)]
#[track_caller]
fn growth_failed(scope: ScopeRef, what: &'static str, len: usize, additional: usize) -> ! {
    allocation_panic(growth_failure(scope, what, len, additional))
}

#[cold]
#[inline(never)]
#[track_caller]
fn format_failed(partial: &ScopedString<'_>) -> ! {
    panic!(
        "format_in!: formatting failed after {} bytes: the arena could not grow the string, or a formatting \
         trait implementation returned an error",
        partial.len()
    )
}
