//! Serializer implementation

use std::io::Write;

use bytes::BufMut;
use serde::{
    ser::{self, SerializeMap},
    Serialize,
};

use crate::{
    __constants::{
        ARRAY, DECIMAL128, DECIMAL32, DECIMAL64, DESCRIBED_BASIC, DESCRIBED_LIST, DESCRIBED_MAP,
        DESCRIPTOR, LAZY_VALUE, SYMBOL, SYMBOL_REF, TIMESTAMP, TRANSPARENT_VEC, UUID,
    },
    error::Error,
    format::{OFFSET_LIST32, OFFSET_LIST8, OFFSET_MAP32, OFFSET_MAP8},
    format_code::EncodingCodes,
    serialized_size,
    util::{FieldRole, IsArrayElement, NonNativeType, SequenceType, StructEncoding},
};

pub(crate) const U8_MAX: usize = u8::MAX as usize;

// Variable type will spend a byte on size
pub(crate) const U8_MAX_MINUS_1: usize = u8::MAX as usize - 1;

// Variable type will spend 4 bytes on size
pub(crate) const U32_MAX_MINUS_4: usize = u32::MAX as usize - 4;

/// Serializes the given value into a byte vector
pub fn to_vec<T>(value: &T) -> Result<Vec<u8>, Error>
where
    T: Serialize,
{
    let mut writer = Vec::new();
    let mut serializer = Serializer::new(&mut writer);
    value.serialize(&mut serializer)?;
    Ok(writer)
}

// TODO: place an optional arena (bumpalo) into the serializer, and whenever a seq serializer is
// created, the internal buffer (or all the nested serializers) will be created in the arena

/// A struct for serializing Rust structs/values into AMQP1.0 wire format
#[derive(Debug)]
pub struct Serializer<W> {
    /// The output of serialized data
    pub writer: W,

    /// Any particular new_type wrapper
    non_native_type: Option<NonNativeType>,

    /// Any particular sequence type
    seq_type: Option<SequenceType>,

    /// How a struct should be encoded
    struct_encoding: Vec<StructEncoding>,

    /// Whether we are serializing an array
    /// NOTE: This should only be changed by `SeqSerializer`
    pub is_array_elem: IsArrayElement,
}

impl<W: Write> From<W> for Serializer<W> {
    fn from(writer: W) -> Self {
        Self::new(writer)
    }
}

impl<W: Write> Serializer<W> {
    /// Creates a new AMQP1.0 serializer
    pub fn new(writer: W) -> Self {
        Self {
            writer,
            non_native_type: None,
            seq_type: None,
            struct_encoding: Vec::new(),
            is_array_elem: IsArrayElement::False,
        }
    }

    /// Consume the serializer and obtain the inner writer
    pub fn into_inner(self) -> W {
        self.writer
    }

    /// Creates an AMQP1.0 serializer for Symbol type
    pub fn symbol(writer: W) -> Self {
        Self {
            writer,
            non_native_type: Some(NonNativeType::Symbol),
            seq_type: None,
            struct_encoding: Default::default(),
            is_array_elem: IsArrayElement::False,
        }
    }

    /// Creates an AMQP1.0 serializer for described list
    pub fn described_list(writer: W) -> Self {
        Self {
            writer,
            non_native_type: None,
            seq_type: None,
            struct_encoding: vec![StructEncoding::DescribedList],
            is_array_elem: IsArrayElement::False,
        }
    }

    /// Creates an AMQP1.0 serilaizer for described map
    pub fn described_map(writer: W) -> Self {
        Self {
            writer,
            non_native_type: None,
            seq_type: None,
            struct_encoding: vec![StructEncoding::DescribedMap],
            is_array_elem: IsArrayElement::False,
        }
    }

    /// Creates an AMQP1.0 serializer for a described wrapper
    pub fn described_basic(writer: W) -> Self {
        Self {
            writer,
            non_native_type: None,
            seq_type: None,
            struct_encoding: vec![StructEncoding::DescribedBasic],
            is_array_elem: IsArrayElement::False,
        }
    }

    fn struct_encoding(&self) -> &StructEncoding {
        self.struct_encoding.last().unwrap_or(&StructEncoding::None)
    }
}

impl<'a, W: Write + 'a> ser::Serializer for &'a mut Serializer<W> {
    // A separate serializer is used for intermediate representation
    type Ok = ();
    type Error = Error;

    type SerializeSeq = SeqSerializer<'a, W>;
    type SerializeTuple = TupleSerializer<'a, W>;
    type SerializeMap = MapSerializer<'a, W>;
    type SerializeTupleStruct = TupleStructSerializer<'a, W>;
    type SerializeStruct = StructSerializer<'a, W>;
    type SerializeTupleVariant = VariantSerializer<'a, W>;

    // The variant struct will be serialized as Value in DescribedSerializer
    type SerializeStructVariant = VariantSerializer<'a, W>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<Self::Ok, Self::Error> {
        match self.is_array_elem {
            IsArrayElement::False => {
                let buf = match v {
                    true => [EncodingCodes::BooleanTrue as u8],
                    false => [EncodingCodes::BooleanFalse as u8],
                };
                // This cannot be moved out of match because array have different length
                self.writer.write_all(&buf)
            }
            IsArrayElement::FirstElement => {
                let buf = match v {
                    true => [EncodingCodes::Boolean as u8, 0x01],
                    false => [EncodingCodes::Boolean as u8, 0x00],
                };
                self.writer.write_all(&buf)
            }
            IsArrayElement::OtherElement => {
                let buf = match v {
                    true => [0x01u8],
                    false => [0x00u8],
                };
                self.writer.write_all(&buf)
            }
        }
        .map_err(Into::into)
    }

    #[inline]
    fn serialize_i8(self, v: i8) -> Result<Self::Ok, Self::Error> {
        match self.is_array_elem {
            IsArrayElement::False | IsArrayElement::FirstElement => {
                let buf = [EncodingCodes::Byte as u8, v as u8];
                self.writer.write_all(&buf).map_err(Into::into)
            }
            IsArrayElement::OtherElement => {
                let buf = [v as u8];
                self.writer.write_all(&buf).map_err(Into::into)
            }
        }
    }

    #[inline]
    fn serialize_i16(self, v: i16) -> Result<Self::Ok, Self::Error> {
        if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
            let code = [EncodingCodes::Short as u8];
            self.writer.write_all(&code)?;
        }
        let buf = v.to_be_bytes();
        self.writer.write_all(&buf).map_err(Into::into)
    }

    #[inline]
    fn serialize_i32(self, v: i32) -> Result<Self::Ok, Self::Error> {
        match self.is_array_elem {
            IsArrayElement::False => match v {
                val @ -128..=127 => {
                    let buf = [EncodingCodes::SmallInt as u8, val as u8];
                    self.writer.write_all(&buf)?;
                }
                val => {
                    let code = [EncodingCodes::Int as u8];
                    self.writer.write_all(&code)?;
                    let buf: [u8; 4] = val.to_be_bytes();
                    self.writer.write_all(&buf)?;
                }
            },
            IsArrayElement::FirstElement => {
                let code = [EncodingCodes::Int as u8];
                self.writer.write_all(&code)?;
                let buf: [u8; 4] = v.to_be_bytes();
                self.writer.write_all(&buf)?;
            }
            IsArrayElement::OtherElement => {
                let buf: [u8; 4] = v.to_be_bytes();
                self.writer.write_all(&buf)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn serialize_i64(self, v: i64) -> Result<Self::Ok, Self::Error> {
        match self.non_native_type {
            None => match self.is_array_elem {
                IsArrayElement::False => match v {
                    val @ -128..=127 => {
                        let buf = [EncodingCodes::SmallLong as u8, val as u8];
                        self.writer.write_all(&buf)?;
                    }
                    val => {
                        let code = [EncodingCodes::Long as u8];
                        self.writer.write_all(&code)?;
                        let buf: [u8; 8] = val.to_be_bytes();
                        self.writer.write_all(&buf)?;
                    }
                },
                IsArrayElement::FirstElement => {
                    let code = [EncodingCodes::Long as u8];
                    self.writer.write_all(&code)?;
                    let buf: [u8; 8] = v.to_be_bytes();
                    self.writer.write_all(&buf)?;
                }
                IsArrayElement::OtherElement => {
                    let buf: [u8; 8] = v.to_be_bytes();
                    self.writer.write_all(&buf)?;
                }
            },
            Some(NonNativeType::Timestamp) => {
                if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
                    let code = [EncodingCodes::Timestamp as u8];
                    self.writer.write_all(&code)?;
                }
                let buf = v.to_be_bytes();
                self.writer.write_all(&buf)?;
            }
            _ => unreachable!(),
        }

        Ok(())
    }

    #[inline]
    fn serialize_u8(self, v: u8) -> Result<Self::Ok, Self::Error> {
        match self.is_array_elem {
            IsArrayElement::False | IsArrayElement::FirstElement => {
                let buf = [EncodingCodes::Ubyte as u8, v];
                self.writer.write_all(&buf)?;
            }
            IsArrayElement::OtherElement => {
                let buf = [v];
                self.writer.write_all(&buf)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn serialize_u16(self, v: u16) -> Result<Self::Ok, Self::Error> {
        if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
            let code = [EncodingCodes::Ushort as u8];
            self.writer.write_all(&code)?;
        }
        let buf: [u8; 2] = v.to_be_bytes();
        self.writer.write_all(&buf).map_err(Into::into)
    }

    #[inline]
    fn serialize_u32(self, v: u32) -> Result<Self::Ok, Self::Error> {
        match self.is_array_elem {
            IsArrayElement::False => {
                match v {
                    // uint0
                    0 => {
                        let buf = [EncodingCodes::Uint0 as u8];
                        self.writer.write_all(&buf)?;
                    }
                    // smalluint
                    val @ 1..=255 => {
                        let buf = [EncodingCodes::SmallUint as u8, val as u8];
                        self.writer.write_all(&buf)?;
                    }
                    // uint
                    val => {
                        let code = [EncodingCodes::Uint as u8];
                        self.writer.write_all(&code)?;
                        let buf: [u8; 4] = val.to_be_bytes();
                        self.writer.write_all(&buf)?;
                    }
                }
            }
            IsArrayElement::FirstElement => {
                let code = [EncodingCodes::Uint as u8];
                self.writer.write_all(&code)?;
                let buf: [u8; 4] = v.to_be_bytes();
                self.writer.write_all(&buf)?;
            }
            IsArrayElement::OtherElement => {
                let buf: [u8; 4] = v.to_be_bytes();
                self.writer.write_all(&buf)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn serialize_u64(self, v: u64) -> Result<Self::Ok, Self::Error> {
        match self.is_array_elem {
            IsArrayElement::False => {
                match v {
                    // ulong0
                    0 => {
                        let buf = [EncodingCodes::Ulong0 as u8];
                        self.writer.write_all(&buf)?;
                    }
                    // small ulong
                    val @ 1..=255 => {
                        let buf = [EncodingCodes::SmallUlong as u8, val as u8];
                        self.writer.write_all(&buf)?;
                    }
                    // ulong
                    val => {
                        let code = [EncodingCodes::Ulong as u8];
                        self.writer.write_all(&code)?;
                        let buf: [u8; 8] = val.to_be_bytes();
                        self.writer.write_all(&buf)?;
                    }
                }
            }
            IsArrayElement::FirstElement => {
                let code = [EncodingCodes::Ulong as u8];
                self.writer.write_all(&code)?;
                let buf: [u8; 8] = v.to_be_bytes();
                self.writer.write_all(&buf)?;
            }
            IsArrayElement::OtherElement => {
                let buf: [u8; 8] = v.to_be_bytes();
                self.writer.write_all(&buf)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn serialize_f32(self, v: f32) -> Result<Self::Ok, Self::Error> {
        if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
            let code = [EncodingCodes::Float as u8];
            self.writer.write_all(&code)?;
        }
        let buf = v.to_be_bytes();
        self.writer.write_all(&buf).map_err(Into::into)
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> Result<Self::Ok, Self::Error> {
        if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
            let code = [EncodingCodes::Double as u8];
            self.writer.write_all(&code)?;
        }
        let buf = v.to_be_bytes();
        self.writer.write_all(&buf).map_err(Into::into)
    }

    // `char` in rust is a subset of the unicode code points and
    // can be directly treated as u32
    #[inline]
    fn serialize_char(self, v: char) -> Result<Self::Ok, Self::Error> {
        if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
            let code = [EncodingCodes::Char as u8];
            self.writer.write_all(&code)?;
        }
        let buf = (v as u32).to_be_bytes();
        self.writer.write_all(&buf).map_err(Into::into)
    }

    // String slices are always valid utf-8
    // `String` is utf-8 encoded
    #[inline]
    fn serialize_str(self, v: &str) -> Result<Self::Ok, Self::Error> {
        match self.is_array_elem {
            IsArrayElement::False => {
                match self.non_native_type {
                    Some(NonNativeType::Symbol) | Some(NonNativeType::SymbolRef) => {
                        // Symbols are encoded as ASCII characters [ASCII].
                        //
                        // Returns the length of this String, in bytes,
                        // not chars or graphemes. In other words, it might
                        // not be what a human considers the length of the string.
                        let l = v.len();

                        match l {
                            // sym8
                            0..=U8_MAX_MINUS_1 => {
                                let code = [EncodingCodes::Sym8 as u8, l as u8];
                                self.writer.write_all(&code)?;
                            }
                            U8_MAX..=U32_MAX_MINUS_4 => {
                                let code = [EncodingCodes::Sym32 as u8];
                                let width = (l as u32).to_be_bytes();
                                self.writer.write_all(&code)?;
                                self.writer.write_all(&width)?;
                            }
                            _ => return Err(Error::too_long()),
                        }
                        self.non_native_type = None;
                    }
                    None => {
                        // A string represents a sequence of Unicode characters
                        // as defined by the Unicode V6.0.0 standard [UNICODE6].
                        let l = v.len();
                        match l {
                            // str8-utf8
                            0..=U8_MAX_MINUS_1 => {
                                let code = [EncodingCodes::Str8 as u8, l as u8];
                                // let width: [u8; 1] = (l as u8).to_be_bytes();
                                self.writer.write_all(&code)?;
                                // self.writer.write_all(&width)?;
                            }
                            // str32-utf8
                            U8_MAX..=U32_MAX_MINUS_4 => {
                                let code = [EncodingCodes::Str32 as u8];
                                let width: [u8; 4] = (l as u32).to_be_bytes();
                                self.writer.write_all(&code)?;
                                self.writer.write_all(&width)?;
                            }
                            _ => return Err(Error::too_long()),
                        }
                    }
                    _ => unreachable!(),
                }
            }
            IsArrayElement::FirstElement => match self.non_native_type {
                Some(NonNativeType::Symbol) | Some(NonNativeType::SymbolRef) => {
                    // Symbols are encoded as ASCII characters [ASCII].
                    //
                    // Returns the length of this String, in bytes,
                    // not chars or graphemes. In other words, it might
                    // not be what a human considers the length of the string.
                    let l = v.len();

                    let code = [EncodingCodes::Sym32 as u8];
                    let width = (l as u32).to_be_bytes();
                    self.writer.write_all(&code)?;
                    self.writer.write_all(&width)?;
                }
                None => {
                    // A string represents a sequence of Unicode characters
                    // as defined by the Unicode V6.0.0 standard [UNICODE6].
                    let l = v.chars().count();

                    let code = [EncodingCodes::Str32 as u8];
                    let width: [u8; 4] = (l as u32).to_be_bytes();
                    self.writer.write_all(&code)?;
                    self.writer.write_all(&width)?;
                }
                _ => unreachable!(),
            },
            IsArrayElement::OtherElement => match self.non_native_type {
                Some(NonNativeType::Symbol) | Some(NonNativeType::SymbolRef) => {
                    // Symbols are encoded as ASCII characters [ASCII].
                    //
                    // Returns the length of this String, in bytes,
                    // not chars or graphemes. In other words, it might
                    // not be what a human considers the length of the string.
                    let l = v.len();

                    let width = (l as u32).to_be_bytes();
                    self.writer.write_all(&width)?;
                }
                None => {
                    // A string represents a sequence of Unicode characters
                    // as defined by the Unicode V6.0.0 standard [UNICODE6].
                    let l = v.chars().count();

                    let width: [u8; 4] = (l as u32).to_be_bytes();
                    self.writer.write_all(&width)?;
                }
                _ => unreachable!(),
            },
        }

        self.writer.write_all(v.as_bytes()).map_err(Into::into)
    }

    #[inline]
    fn serialize_bytes(self, v: &[u8]) -> Result<Self::Ok, Self::Error> {
        let l = v.len();
        match self.non_native_type {
            None => {
                match self.is_array_elem {
                    IsArrayElement::False => {
                        match l {
                            // vbin8
                            0..=U8_MAX_MINUS_1 => {
                                let code = [EncodingCodes::Vbin8 as u8];
                                let width: [u8; 1] = (l as u8).to_be_bytes();
                                self.writer.write_all(&code)?;
                                self.writer.write_all(&width)?;
                            }
                            // vbin32
                            U8_MAX..=U32_MAX_MINUS_4 => {
                                let code = [EncodingCodes::Vbin32 as u8];
                                let width: [u8; 4] = (l as u32).to_be_bytes();
                                self.writer.write_all(&code)?;
                                self.writer.write_all(&width)?;
                            }
                            _ => return Err(Error::too_long()),
                        }
                    }
                    IsArrayElement::FirstElement => {
                        let code = [EncodingCodes::Vbin32 as u8];
                        let width: [u8; 4] = (l as u32).to_be_bytes();
                        self.writer.write_all(&code)?;
                        self.writer.write_all(&width)?;
                    }
                    IsArrayElement::OtherElement => {
                        let width: [u8; 4] = (l as u32).to_be_bytes();
                        self.writer.write_all(&width)?;
                    }
                }
            }
            Some(NonNativeType::Dec32) => {
                if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
                    let code = [EncodingCodes::Decimal32 as u8];
                    self.writer.write_all(&code)?;
                }
                self.non_native_type = None;
            }
            Some(NonNativeType::Dec64) => {
                if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
                    let code = [EncodingCodes::Decimal64 as u8];
                    self.writer.write_all(&code)?;
                }
                self.non_native_type = None;
            }
            Some(NonNativeType::Dec128) => {
                if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
                    let code = [EncodingCodes::Decimal128 as u8];
                    self.writer.write_all(&code)?;
                }
                self.non_native_type = None;
            }
            Some(NonNativeType::Uuid) => {
                if let IsArrayElement::False | IsArrayElement::FirstElement = self.is_array_elem {
                    let code = [EncodingCodes::Uuid as u8];
                    self.writer.write_all(&code)?;
                }
                self.non_native_type = None;
            }
            Some(NonNativeType::LazyValue) => {
                // We just need to write the bytes
            }
            // Timestamp should be handled by i64
            Some(NonNativeType::Timestamp)
            | Some(NonNativeType::Symbol)
            | Some(NonNativeType::SymbolRef) => unreachable!(),
        }

        self.writer.write_all(v).map_err(Into::into)
    }

    // None is serialized as Bson::Null in BSON
    #[inline]
    fn serialize_none(self) -> Result<Self::Ok, Self::Error> {
        let buf = [EncodingCodes::Null as u8];
        self.writer.write_all(&buf).map_err(Into::into)
    }

    #[inline]
    fn serialize_some<T>(self, value: &T) -> Result<Self::Ok, Self::Error>
    where
        T: Serialize + ?Sized,
    {
        // Some(T) is serialized simply as if it is T in BSON
        value.serialize(self)
    }

    #[inline]
    fn serialize_unit(self) -> Result<Self::Ok, Self::Error> {
        // unit is serialized as Bson::Null in BSON
        let buf = [EncodingCodes::Null as u8];
        self.writer.write_all(&buf).map_err(Into::into)
    }

    // JSON, BSOM, AVRO all serialized to unit
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Self::Ok, Self::Error> {
        self.serialize_unit()
    }

    // Serialize into tag
    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
    ) -> Result<Self::Ok, Self::Error> {
        self.serialize_u32(variant_index)
    }

    // Treat new_type structs as insignificant wrappers around the data they contain
    //
    // Serialization of `Symbol`
    // - The serializer will determine whether name == SYMBOL_MAGIC
    // - If a Symbol is to be serialized, it will write a Symbol constructor and modify it's internal state to Symbol
    #[inline]
    fn serialize_newtype_struct<T>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error>
    where
        T: Serialize + ?Sized,
    {
        if name == SYMBOL {
            self.non_native_type = Some(NonNativeType::Symbol);
        } else if name == SYMBOL_REF {
            self.non_native_type = Some(NonNativeType::SymbolRef);
        } else if name == ARRAY {
            self.seq_type = Some(SequenceType::Array);
        } else if name == DECIMAL32 {
            self.non_native_type = Some(NonNativeType::Dec32);
        } else if name == DECIMAL64 {
            self.non_native_type = Some(NonNativeType::Dec64);
        } else if name == DECIMAL128 {
            self.non_native_type = Some(NonNativeType::Dec128);
        } else if name == TIMESTAMP {
            self.non_native_type = Some(NonNativeType::Timestamp);
        } else if name == UUID {
            self.non_native_type = Some(NonNativeType::Uuid);
        } else if name == TRANSPARENT_VEC {
            self.seq_type = Some(SequenceType::TransparentVec);
        } else if name == LAZY_VALUE {
            self.non_native_type = Some(NonNativeType::LazyValue);
        }
        value.serialize(self)
    }

    // Treat new_type variant as insignificant wrappers around the data they contain
    #[inline]
    fn serialize_newtype_variant<T>(
        self,
        name: &'static str,
        variant_index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error>
    where
        T: Serialize + ?Sized,
    {
        // use ser::SerializeSeq;
        if name == DESCRIPTOR
        // || name == VALUE || name == AMQP_ERROR || name == CONNECTION_ERROR || name == SESSION_ERROR || name == LINK_ERROR
        {
            let code = [EncodingCodes::DescribedType as u8];
            self.writer.write_all(&code)?;
            value.serialize(self)
        } else {
            let mut state = self.serialize_map(Some(1))?;
            state.serialize_entry(&variant_index, value)?;
            // state.serialize_ele(value)?;
            state.end()
        }
    }

    // A variably sized heterogeneous sequence of values
    //
    // This will be encoded as primitive type `Array`
    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        // The most external array should be treated as IsArrayElement::False
        Ok(SeqSerializer::new(self, len))
    }

    // A statically sized heterogeneous sequence of values
    // for which the length will be known at deserialization
    // time without looking at the serialized data
    //
    // This will be encoded as primitive type `List`
    #[inline]
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Ok(TupleSerializer::new(self, len))
    }

    // A named tuple, for example `struct Rgb(u8, u8, u8)`
    //
    // The tuple struct looks rather like a rust-exclusive data type.
    // Thus this will be treated the same as a tuple (as in JSON and AVRO)
    #[inline]
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        // This will never be called on a Described type because the Decribed type is
        // a struct.
        // Simply serialize the content as seq
        if name == DESCRIBED_BASIC {
            self.struct_encoding.push(StructEncoding::DescribedBasic);
            // let code = [EncodingCodes::DescribedType as u8];
            // self.writer.write_all(&code)?;
            Ok(TupleStructSerializer::descriptor(self))
        } else if name == DESCRIBED_LIST {
            self.struct_encoding.push(StructEncoding::DescribedList);
            // let code = [EncodingCodes::DescribedType as u8];
            // self.writer.write_all(&code)?;
            Ok(TupleStructSerializer::descriptor(self))
        } else {
            Ok(TupleStructSerializer::fields(self))
        }
    }

    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Ok(MapSerializer::new(self, len))
    }

    // The serde data model treats struct as "A statically sized heterogeneous key-value pairing"
    //
    // Naive impl: serialize into a list (because Composite types in AMQP is serialized as
    // a described list)
    //
    // Can be configured to serialize into a map or list when wrapped with `Described`
    #[inline]
    fn serialize_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        // The name should override the parent struct encoding
        if name == DESCRIBED_LIST {
            self.struct_encoding.push(StructEncoding::DescribedList);
            Ok(StructSerializer::new(self))
        } else if name == DESCRIBED_MAP {
            self.struct_encoding.push(StructEncoding::DescribedMap);
            Ok(StructSerializer::new(self))
        } else if name == DESCRIBED_BASIC {
            self.struct_encoding.push(StructEncoding::DescribedBasic);
            Ok(StructSerializer::new(self))
        } else {
            Ok(StructSerializer::new(self))
        }
    }

    // Treat this as if it is a tuple because this kind of enum is unique in rust
    #[inline]
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Ok(VariantSerializer::new(
            self,
            name,
            variant_index,
            variant,
            len,
        ))
    }

    // Treat it as if it is a struct because this is not found in other languages
    #[inline]
    fn serialize_struct_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Ok(VariantSerializer::new(
            self,
            name,
            variant_index,
            variant,
            len,
        ))
    }

    #[inline]
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// Internal state of the sequence serializer
#[derive(Debug, Clone)]
enum SeqSerializerState {
    /// Initialized with the length hint
    Init(Option<usize>),

    /// Buffering the serialized bytes
    Buffer(Vec<u8>),
}

/// Serializer for sequence types
#[derive(Debug)]
pub struct SeqSerializer<'a, W: 'a> {
    se: &'a mut Serializer<W>,
    num: usize,
    state: SeqSerializerState,
}

impl<'a, W: 'a> SeqSerializer<'a, W> {
    fn new(se: &'a mut Serializer<W>, len: Option<usize>) -> Self {
        Self {
            se,
            num: 0,
            state: SeqSerializerState::Init(len),
        }
    }

    fn get_buffer_mut_or_alloc<T>(&mut self, element: &T) -> Result<&mut Vec<u8>, Error>
    where
        T: Serialize + ?Sized,
    {
        if let SeqSerializerState::Init(len) = self.state {
            let total_len = match len {
                Some(len) => len * serialized_size(element)?,
                None => 0,
            };
            let buf = Vec::with_capacity(total_len);
            self.state = SeqSerializerState::Buffer(buf);
        }

        match &mut self.state {
            SeqSerializerState::Buffer(buf) => Ok(buf),
            _ => unreachable!("SeqSerializerState::Init should have been handled"),
        }
    }
}

// This requires some hacking way of getting the constructor (EncodingCode)
// for the type. Use TypeId?
//
// Serialize into a List
// List requires knowing the total number of bytes after serialized
impl<'a, W: Write + 'a> ser::SerializeSeq for SeqSerializer<'a, W> {
    type Ok = ();
    type Error = Error;

    #[inline]
    fn serialize_element<T>(&mut self, value: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        match self.se.seq_type {
            None | Some(SequenceType::List) => {
                // Element in the list always has it own constructor
                let buf = self.get_buffer_mut_or_alloc(value)?;
                let mut se = Serializer::new(buf);
                value.serialize(&mut se)?;
            }
            Some(SequenceType::Array) => {
                let mut se = match self.num {
                    // The first element should include the contructor code
                    0 => {
                        let buf = self.get_buffer_mut_or_alloc(value)?;
                        let mut serializer = Serializer::new(buf);
                        serializer.is_array_elem = IsArrayElement::FirstElement;
                        serializer
                    }
                    // The remaining element should only write the value bytes
                    _ => {
                        let buf = self.get_buffer_mut_or_alloc(value)?;
                        let mut serializer = Serializer::new(buf);
                        serializer.is_array_elem = IsArrayElement::OtherElement;
                        serializer
                    }
                };
                value.serialize(&mut se)?;
            }
            Some(SequenceType::TransparentVec) => {
                // FIXME: Directly write to the writer
                let buf = self.get_buffer_mut_or_alloc(value)?;
                let mut se = Serializer::new(buf);
                value.serialize(&mut se)?;
            }
        }

        self.num += 1;
        Ok(())
    }

    #[inline]
    fn end(self) -> Result<Self::Ok, Self::Error> {
        // let Self { se, num, buf } = self;

        let Self { se, num, state } = self;
        let buf = match state {
            SeqSerializerState::Init(_) => Vec::new(),
            SeqSerializerState::Buffer(buf) => buf,
        };

        match se.seq_type {
            None | Some(SequenceType::List) => {
                write_list(&mut se.writer, num, &buf, &se.is_array_elem)
            }
            Some(SequenceType::Array) => write_array(&mut se.writer, num, &buf, &se.is_array_elem),
            Some(SequenceType::TransparentVec) => write_transparent_vec(&mut se.writer, &buf),
        }
    }
}

fn write_array<'a, W: Write + 'a>(
    mut writer: W,
    num: usize,
    buf: &'a [u8],
    ext_is_array_elem: &IsArrayElement,
) -> Result<(), Error> {
    let len = buf.len();

    match len {
        0..=U8_MAX_MINUS_1 => {
            if let IsArrayElement::False | IsArrayElement::FirstElement = ext_is_array_elem {
                let code = [EncodingCodes::Array8 as u8];
                writer.write_all(&code)?;
            }
            // `len` must include the one byte taken by `num`
            let len = len + 1; // not using const OFFSET because it includes format code
            let len_num = [len as u8, num as u8];
            writer.write_all(&len_num)?;
        }
        U8_MAX..=U32_MAX_MINUS_4 => {
            if let IsArrayElement::False | IsArrayElement::FirstElement = ext_is_array_elem {
                let code = [EncodingCodes::Array32 as u8];
                writer.write_all(&code)?;
            }
            // `len` must include the four bytes taken by `num`
            let len = len + 4; // not using const OFFSET because it includes format code
            let len = (len as u32).to_be_bytes();
            let num = (num as u32).to_be_bytes();
            writer.write_all(&len)?;
            writer.write_all(&num)?;
        }
        _ => return Err(Error::too_long()),
    }
    writer.write_all(buf)?;
    Ok(())
}

fn write_transparent_vec<'a, W: Write + 'a>(mut writer: W, buf: &'a [u8]) -> Result<(), Error> {
    writer.write_all(buf)?;
    Ok(())
}

/// Serializer for tuple types
#[derive(Debug)]
pub struct TupleSerializer<'a, W: 'a> {
    se: &'a mut Serializer<W>,
    num: usize,
    buf: Vec<u8>,
}

impl<'a, W: 'a> TupleSerializer<'a, W> {
    fn new(se: &'a mut Serializer<W>, num: usize) -> Self {
        Self {
            se,
            num,
            buf: Vec::new(),
        }
    }
}

// Serialize into a List
// List requires knowing the total number of bytes after serialized
impl<'a, W: Write + 'a> ser::SerializeTuple for TupleSerializer<'a, W> {
    type Ok = ();
    type Error = Error;

    #[inline]
    fn serialize_element<T>(&mut self, value: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        let mut serializer = Serializer::new(&mut self.buf);
        value.serialize(&mut serializer)
    }

    #[inline]
    fn end(self) -> Result<Self::Ok, Self::Error> {
        let Self { se, num, buf } = self;
        write_list(&mut se.writer, num, &buf, &se.is_array_elem)
    }
}

fn write_list<'a, W: Write + 'a>(
    mut writer: W,
    num: usize,
    buf: &'a [u8],
    ext_is_array_elem: &IsArrayElement,
) -> Result<(), Error> {
    let len = buf.len();

    // if `len` < 255, `num` must be smaller than 255
    match len {
        0 => {
            let code = [EncodingCodes::List0 as u8];
            writer.write_all(&code)?;
        }
        // FIXME: whether `len` should be below 255-1
        1..=U8_MAX_MINUS_1 => {
            if let IsArrayElement::False | IsArrayElement::FirstElement = ext_is_array_elem {
                let code = [EncodingCodes::List8 as u8];
                writer.write_all(&code)?;
            }
            // `len` must include the one byte taken by `num`
            let len = len + OFFSET_LIST8;
            let len_num = [len as u8, num as u8];
            writer.write_all(&len_num)?;
        }
        // FIXME: whether `len` should be below u32::MAX - 4
        U8_MAX..=U32_MAX_MINUS_4 => {
            if let IsArrayElement::False | IsArrayElement::FirstElement = ext_is_array_elem {
                let code = [EncodingCodes::List32 as u8];
                writer.write_all(&code)?;
            }
            // Length including the four bytes taken by `num`
            let len = len + OFFSET_LIST32;
            let len: [u8; 4] = (len as u32).to_be_bytes();
            let num: [u8; 4] = (num as u32).to_be_bytes();
            writer.write_all(&len)?;
            writer.write_all(&num)?;
        }
        _ => return Err(Error::too_long()),
    }
    writer.write_all(buf)?;
    Ok(())
}

#[derive(Debug)]
enum MapSerializerState {
    /// Initialized with the length hint
    ///
    /// `Init(None)` is also used as the temporary state when the buffer is being
    /// taken out
    Init(Option<usize>),

    /// Initialized with the length hint and the first key
    ///
    /// The buffer should only contain the serialized bytes of the first key
    KeyInit { len: Option<usize>, buf: Vec<u8> },

    /// Buffering the serialized bytes
    Buffer(Vec<u8>),
}

impl MapSerializerState {
    fn take(&mut self) -> Self {
        std::mem::replace(self, MapSerializerState::Init(None))
    }
}

/// Serializer for map types
#[derive(Debug)]
pub struct MapSerializer<'a, W: 'a> {
    se: &'a mut Serializer<W>,

    /// Actual number of elements in the map (a pair of key and value will be counted as 2)
    num: usize,

    state: MapSerializerState,
}

impl<'a, W: 'a> MapSerializer<'a, W> {
    fn new(se: &'a mut Serializer<W>, len: Option<usize>) -> Self {
        Self {
            se,
            num: 0,
            state: MapSerializerState::Init(len),
        }
    }

    fn get_buffer_or_alloc_for_entry<K, V>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<&mut Vec<u8>, Error>
    where
        K: Serialize + ?Sized,
        V: Serialize + ?Sized,
    {
        match self.state.take() {
            MapSerializerState::Init(len) => {
                let cap = match len {
                    Some(len) => len * (serialized_size(key)? + serialized_size(value)?),
                    None => 0,
                };
                let buf = Vec::with_capacity(cap);
                self.state = MapSerializerState::Buffer(buf);
            }
            MapSerializerState::KeyInit { len, mut buf } => {
                let reserve = match len {
                    Some(len) => {
                        len * (serialized_size(key)? + serialized_size(value)?) - buf.len()
                    }
                    None => 0,
                };
                buf.reserve(reserve);
                self.state = MapSerializerState::Buffer(buf);
            }
            // Make sure to put the buffer back because take will put a `Init(None)` as temporary state
            state => self.state = state,
        }

        match &mut self.state {
            MapSerializerState::Buffer(buf) => Ok(buf),
            _ => unreachable!("MapSerializerState::Init should have been handled"),
        }
    }

    fn get_buffer_or_alloc_for_key<K>(&mut self, key: &K) -> Result<&mut Vec<u8>, Error>
    where
        K: Serialize + ?Sized,
    {
        match self.state.take() {
            MapSerializerState::Init(len) => {
                let cap = serialized_size(key)?;
                let buf = Vec::with_capacity(cap);
                self.state = MapSerializerState::KeyInit { len, buf };
            }
            // Make sure to put the state back because take will put a `Init(None)` as temporary state
            state => self.state = state,
        }

        match &mut self.state {
            MapSerializerState::KeyInit { len: _, buf } => Ok(buf),
            MapSerializerState::Buffer(buf) => Ok(buf),
            MapSerializerState::Init(_) => {
                unreachable!("MapSerializerState::Init should have been handled")
            }
        }
    }

    fn get_buffer_or_alloc_for_value<V>(&mut self, value: &V) -> Result<&mut Vec<u8>, Error>
    where
        V: Serialize + ?Sized,
    {
        match self.state.take() {
            // Though this should not appear, we should handle it
            // just to be safe
            MapSerializerState::Init(len) => {
                let cap = match len {
                    Some(len) => len * serialized_size(value)?,
                    None => 0,
                };
                let buf = Vec::with_capacity(cap);
                self.state = MapSerializerState::Buffer(buf);
            }
            MapSerializerState::KeyInit { len, mut buf } => {
                let key_len = buf.len();
                let val_len = serialized_size(value)?;
                let reserve = match len {
                    Some(len) => len * (key_len + val_len) - key_len,
                    None => 0,
                };
                buf.reserve(reserve);
                self.state = MapSerializerState::Buffer(buf);
            }
            state => self.state = state,
        }

        match &mut self.state {
            MapSerializerState::Buffer(buf) => Ok(buf),
            _ => unreachable!("MapSerializerState::KeyInit should have been handled"),
        }
    }
}

// Map is a compound type and thus requires knowing the size of the total number
// of bytes
impl<'a, W: Write + 'a> ser::SerializeMap for MapSerializer<'a, W> {
    type Ok = ();
    type Error = Error;

    #[inline]
    fn serialize_entry<K, V>(&mut self, key: &K, value: &V) -> Result<(), Self::Error>
    where
        K: Serialize + ?Sized,
        V: Serialize + ?Sized,
    {
        let buf = self.get_buffer_or_alloc_for_entry(key, value)?;
        let mut serializer = Serializer::new(buf);
        key.serialize(&mut serializer)?;
        value.serialize(&mut serializer)?;
        self.num += 2;
        Ok(())
    }

    #[inline]
    fn serialize_key<T>(&mut self, key: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        let buf = self.get_buffer_or_alloc_for_key(key)?;
        let mut serializer = Serializer::new(buf);
        key.serialize(&mut serializer)?;
        self.num += 1;
        Ok(())
    }

    #[inline]
    fn serialize_value<T>(&mut self, value: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        let buf = self.get_buffer_or_alloc_for_value(value)?;
        let mut serializer = Serializer::new(buf);
        value.serialize(&mut serializer)?;
        self.num += 1;
        Ok(())
    }

    #[inline]
    fn end(self) -> Result<Self::Ok, Self::Error> {
        let Self { se, num, state } = self;
        let buf = match state {
            MapSerializerState::Init(_) => Vec::new(),
            // This should not happen but we should handle it just to be safe
            MapSerializerState::KeyInit { len: _, buf } => buf,
            MapSerializerState::Buffer(buf) => buf,
        };

        write_map(&mut se.writer, num, &buf, &se.is_array_elem)
    }
}

fn write_map<'a, W: Write + 'a>(
    mut writer: W,
    num: usize,
    buf: &'a [u8],
    ext_is_array_elem: &IsArrayElement,
) -> Result<(), Error> {
    let len = buf.len();

    match len {
        // FIXME: Whether `len` should be 255 - 1
        0..=U8_MAX_MINUS_1 => {
            if let IsArrayElement::False | IsArrayElement::FirstElement = ext_is_array_elem {
                let code = [EncodingCodes::Map8 as u8];
                writer.write_all(&code)?;
            }
            // `len` must include the one byte taken by `num`
            let len = len + OFFSET_MAP8;
            let len_num = [len as u8, num as u8];
            writer.write_all(&len_num)?;
        }
        // FIXME: whether `len` should be u32::MAX - 4
        U8_MAX..=U32_MAX_MINUS_4 => {
            if let IsArrayElement::False | IsArrayElement::FirstElement = ext_is_array_elem {
                let code = [EncodingCodes::Map32 as u8];
                writer.write_all(&code)?;
            }
            // `len` must include the four bytes taken by `num`
            let len = len + OFFSET_MAP32;
            let len = (len as u32).to_be_bytes();
            let num = (num as u32).to_be_bytes();
            writer.write_all(&len)?;
            writer.write_all(&num)?;
        }
        _ => return Err(Error::too_long()),
    }
    writer.write_all(buf)?;
    Ok(())
}

/// Serializer for tuple struct types
#[derive(Debug)]
pub struct TupleStructSerializer<'a, W: 'a> {
    se: &'a mut Serializer<W>,
    field_role: FieldRole,
    count: usize,
    buf: Vec<u8>,
}

impl<'a, W: 'a> TupleStructSerializer<'a, W> {
    fn descriptor(se: &'a mut Serializer<W>) -> Self {
        Self {
            se,
            field_role: FieldRole::Descriptor,
            count: 0,
            buf: Vec::new(),
        }
    }

    fn fields(se: &'a mut Serializer<W>) -> Self {
        Self {
            se,
            field_role: FieldRole::Fields,
            count: 0,
            buf: Vec::new(),
        }
    }
}

impl<'a, W: 'a> AsMut<Serializer<W>> for TupleStructSerializer<'a, W> {
    fn as_mut(&mut self) -> &mut Serializer<W> {
        self.se
    }
}

impl<'a, W: Write + 'a> ser::SerializeTupleStruct for TupleStructSerializer<'a, W> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T>(&mut self, value: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        match self.field_role {
            FieldRole::Descriptor => {
                self.field_role = FieldRole::Fields;
                value.serialize(self.as_mut())
            }
            FieldRole::Fields => {
                self.count += 1;
                match self.se.struct_encoding() {
                    StructEncoding::None => {
                        // serialize regualr tuple struct as a list like in tuple
                        let mut serializer = Serializer::new(&mut self.buf);
                        serializer.is_array_elem = self.se.is_array_elem.clone();
                        value.serialize(&mut serializer)
                    }
                    StructEncoding::DescribedBasic => {
                        let mut serializer = Serializer::new(&mut self.buf);
                        serializer.is_array_elem = self.se.is_array_elem.clone();
                        value.serialize(&mut serializer)
                    }
                    StructEncoding::DescribedList => {
                        let mut serializer = Serializer::described_list(&mut self.buf);
                        value.serialize(&mut serializer)
                    }
                    StructEncoding::DescribedMap => {
                        unreachable!()
                    }
                }
            }
        }
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        match self.se.struct_encoding() {
            StructEncoding::None => {
                // serialize regualr tuple struct as a list like in tuple
                write_list(
                    &mut self.se.writer,
                    self.count,
                    &self.buf,
                    &IsArrayElement::False,
                )
            }
            StructEncoding::DescribedBasic => {
                self.se.struct_encoding.pop();
                // simply serialize the value without buffering
                self.se.writer.write_all(&self.buf)?;
                Ok(())
            }
            StructEncoding::DescribedList => {
                self.se.struct_encoding.pop();
                write_list(
                    &mut self.se.writer,
                    self.count,
                    &self.buf,
                    &IsArrayElement::False,
                )
            }
            StructEncoding::DescribedMap => {
                self.se.struct_encoding.pop();
                unreachable!()
            }
        }
    }
}

/// A serializer for struct types
#[derive(Debug)]
pub struct StructSerializer<'a, W: 'a> {
    se: &'a mut Serializer<W>,
    count: usize,
    buf: Vec<u8>,
}

impl<'a, W: 'a> StructSerializer<'a, W> {
    fn new(se: &'a mut Serializer<W>) -> Self {
        Self {
            se,
            count: 0,
            buf: vec![],
        }
    }
}

impl<'a, W: 'a> AsMut<Serializer<W>> for StructSerializer<'a, W> {
    fn as_mut(&mut self) -> &mut Serializer<W> {
        self.se
    }
}

// Serialize into a list
impl<'a, W: Write + 'a> ser::SerializeStruct for StructSerializer<'a, W> {
    type Ok = ();
    type Error = Error;

    #[inline]
    fn serialize_field<T>(&mut self, key: &'static str, value: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        if key == DESCRIPTOR {
            value.serialize(self.as_mut())
        } else {
            self.count += 1;
            match self.se.struct_encoding() {
                StructEncoding::None => {
                    // normal struct will be serialized as a list
                    let mut serializer = Serializer::new(&mut self.buf);
                    serializer.is_array_elem = self.se.is_array_elem.clone();
                    value.serialize(&mut serializer)
                }
                StructEncoding::DescribedBasic => value.serialize(self.as_mut()),
                StructEncoding::DescribedList => {
                    let mut serializer = Serializer::described_list(&mut self.buf);
                    value.serialize(&mut serializer)
                }
                StructEncoding::DescribedMap => {
                    let mut serializer = Serializer::described_map(&mut self.buf);
                    key.serialize(&mut serializer)?;
                    value.serialize(&mut serializer)
                }
            }
        }
    }

    #[inline]
    fn end(self) -> Result<Self::Ok, Self::Error> {
        match self.se.struct_encoding() {
            StructEncoding::None => write_list(
                &mut self.se.writer,
                self.count,
                &self.buf,
                &self.se.is_array_elem,
            ),
            StructEncoding::DescribedBasic => {
                self.se.struct_encoding.pop();
                Ok(())
            }
            // The wrapper of value is always the `Described` struct. `Described` constructor is handled elsewhere
            StructEncoding::DescribedList => {
                self.se.struct_encoding.pop();
                write_list(
                    &mut self.se.writer,
                    self.count,
                    &self.buf,
                    &self.se.is_array_elem,
                )
            }
            // The wrapper of value is always the `Described` struct. `Described` constructor is handled elsewhere
            StructEncoding::DescribedMap => {
                self.se.struct_encoding.pop();
                write_map(
                    &mut self.se.writer,
                    self.count * 2,
                    &self.buf,
                    &self.se.is_array_elem,
                )
            }
        }
    }
}

/// Serializer for enum variants
#[derive(Debug)]
pub struct VariantSerializer<'a, W: 'a> {
    se: &'a mut Serializer<W>,
    _name: &'static str,
    variant_index: u32,
    _variant: &'static str,
    num: usize,
    buf: Vec<u8>,
}

impl<'a, W: 'a> VariantSerializer<'a, W> {
    fn new(
        se: &'a mut Serializer<W>,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        num: usize, // number of field in the tuple
    ) -> Self {
        Self {
            se,
            _name: name,
            variant_index,
            _variant: variant,
            num,
            buf: Vec::new(),
        }
    }
}

impl<'a, W: Write + 'a> ser::SerializeTupleVariant for VariantSerializer<'a, W> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T>(&mut self, value: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        let mut se = Serializer::new(&mut self.buf);
        value.serialize(&mut se)
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        use bytes::BytesMut;
        let kv_buf = BytesMut::new();
        let mut writer = kv_buf.writer();

        // Serialize key
        let mut key_se = Serializer::new(&mut writer);
        ser::Serialize::serialize(&self.variant_index, &mut key_se)?;

        // Write values
        write_list(&mut writer, self.num, &self.buf, &self.se.is_array_elem)?;

        // Write entire list
        let buf = writer.into_inner().freeze();
        // write_list(&mut self.se.writer, 2, &buf, &self.se.is_array_elem)
        write_map(&mut self.se.writer, 2, &buf, &self.se.is_array_elem)
    }
}

impl<'a, W: Write + 'a> ser::SerializeStructVariant for VariantSerializer<'a, W> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T>(&mut self, _key: &'static str, value: &T) -> Result<(), Self::Error>
    where
        T: Serialize + ?Sized,
    {
        <Self as ser::SerializeTupleVariant>::serialize_field(self, value)
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        <Self as ser::SerializeTupleVariant>::end(self)
    }
}

#[cfg(test)]
mod test {
    use crate::{
        descriptor::Descriptor,
        format_code::EncodingCodes,
        primitives::{Array, Dec128, Dec32, Dec64, Symbol, Timestamp, Uuid},
    };

    use super::*;

    fn assert_eq_on_serialized_vs_expected<T: Serialize>(val: T, expected: &[u8]) {
        let serialized = to_vec(&val).unwrap();
        assert_eq!(&serialized[..], expected);
    }

    #[test]
    fn test_bool() {
        let val = true;
        let expected = vec![EncodingCodes::BooleanTrue as u8];
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = false;
        let expected = vec![EncodingCodes::BooleanFalse as u8];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_i8() {
        let val = 0i8;
        let expected = vec![EncodingCodes::Byte as u8, 0];
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = i8::MIN;
        let expected = vec![EncodingCodes::Byte as u8, 128u8];
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = i8::MAX;
        let expected = vec![EncodingCodes::Byte as u8, 127u8];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_i16() {
        let val = 0i16;
        let expected = vec![EncodingCodes::Short as u8, 0, 0];
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = -1i16;
        let expected = vec![EncodingCodes::Short as u8, 255, 255];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_i32() {
        // small int
        let val = 0i32;
        let expected = vec![EncodingCodes::SmallInt as u8, 0];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // int
        let val = i32::MAX;
        let expected = vec![EncodingCodes::Int as u8, 127, 255, 255, 255];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_i64() {
        // small long
        let val = 0i64;
        let expected = vec![EncodingCodes::SmallLong as u8, 0];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // long
        let val = i64::MAX;
        let expected = vec![
            EncodingCodes::Long as u8,
            127,
            255,
            255,
            255,
            255,
            255,
            255,
            255,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_u8() {
        let val = u8::MIN;
        let expected = vec![EncodingCodes::Ubyte as u8, 0];
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = u8::MAX;
        let expected = vec![EncodingCodes::Ubyte as u8, 255];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_u16() {
        let val = 0u16;
        let expected = vec![EncodingCodes::Ushort as u8, 0, 0];
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = 131u16;
        let expected = vec![EncodingCodes::Ushort as u8, 0, 131];
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = 65535u16;
        let expected = vec![EncodingCodes::Ushort as u8, 255, 255];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_u32() {
        // uint0
        let val = 0u32;
        let expected = vec![EncodingCodes::Uint0 as u8];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // small uint
        let val = 255u32;
        let expected = vec![EncodingCodes::SmallUint as u8, 255];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // uint
        let val = u32::MAX;
        let mut expected = vec![EncodingCodes::Uint as u8];
        expected.append(&mut vec![255; 4]);
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_u64() {
        // ulong0
        let val = 0u64;
        let expected = vec![EncodingCodes::Ulong0 as u8];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // small ulong
        let val = 255u64;
        let expected = vec![EncodingCodes::SmallUlong as u8, 255];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // ulong
        let val = u64::MAX;
        let mut expected = vec![EncodingCodes::Ulong as u8];
        expected.append(&mut vec![255u8; 8]);
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_f32() {
        let val = f32::MIN;
        let mut expected = vec![EncodingCodes::Float as u8];
        expected.append(&mut val.to_be_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = -123.456f32;
        let mut expected = vec![EncodingCodes::Float as u8];
        expected.append(&mut val.to_be_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = 0.0f32;
        let mut expected = vec![EncodingCodes::Float as u8];
        expected.append(&mut val.to_be_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = 123.456f32;
        let mut expected = vec![EncodingCodes::Float as u8];
        expected.append(&mut val.to_be_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val = f32::MAX;
        let mut expected = vec![EncodingCodes::Float as u8];
        expected.append(&mut val.to_be_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_f64() {
        let val = 123.456f64;
        let mut expected = vec![EncodingCodes::Double as u8];
        expected.append(&mut val.to_be_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_char() {
        let val = 'c';
        let mut expected = vec![EncodingCodes::Char as u8];
        expected.append(&mut (val as u32).to_be_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_str() {
        const SMALL_STRING_VALUIE: &str = "Small String";
        const LARGE_STRING_VALUIE: &str = r#"Large String: 
            "The quick brown fox jumps over the lazy dog. 
            "The quick brown fox jumps over the lazy dog. 
            "The quick brown fox jumps over the lazy dog. 
            "The quick brown fox jumps over the lazy dog. 
            "The quick brown fox jumps over the lazy dog. 
            "The quick brown fox jumps over the lazy dog. 
            "The quick brown fox jumps over the lazy dog. 
            "The quick brown fox jumps over the lazy dog."#;

        // str8
        let val = SMALL_STRING_VALUIE;
        let len = val.len() as u8;
        let mut expected = vec![EncodingCodes::Str8 as u8, len];
        expected.append(&mut val.as_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        // u8 max length
        let val = String::from_utf8(vec![b'X'; u8::MAX as usize - 1]).unwrap();
        let len = val.len() as u8;
        let mut expected = vec![EncodingCodes::Str8 as u8, len];
        expected.append(&mut val.as_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        // str32
        let val = LARGE_STRING_VALUIE;
        let len = val.len() as u32;
        let mut expected = vec![EncodingCodes::Str32 as u8];
        expected.append(&mut len.to_be_bytes().to_vec());
        expected.append(&mut val.as_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        // u8 max length
        let val = String::from_utf8(vec![b'X'; u8::MAX as usize]).unwrap();
        let len = val.len() as u32;
        let mut expected = vec![EncodingCodes::Str32 as u8];
        expected.append(&mut len.to_be_bytes().to_vec());
        expected.append(&mut val.as_bytes().to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_bytes() {
        // serialize_bytes only works with serde_bytes wrapper types `Bytes` and `ByteBuf`
        use serde_bytes::ByteBuf;
        const SMALL_BYTES_VALUE: &[u8] = &[133u8; 200];
        const U8_MAX_MINUS_ONE_BYTES_VALUE: &[u8] = &[255u8; 254];
        const U8_MAX_BYTES_VALUE: &[u8] = &[255u8; 255];
        const LARGE_BYTES_VALUE: &[u8] = &[199u8; 1000];

        // vbin8
        let val = ByteBuf::from(SMALL_BYTES_VALUE);
        let len = val.len() as u8;
        let mut expected = vec![EncodingCodes::Vbin8 as u8, len];
        expected.append(&mut val.to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        // u8 max length
        let val = ByteBuf::from(U8_MAX_MINUS_ONE_BYTES_VALUE);
        let len = val.len() as u8;
        let mut expected = vec![EncodingCodes::Vbin8 as u8, len];
        expected.append(&mut val.to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        // vbin32
        let val = ByteBuf::from(LARGE_BYTES_VALUE);
        let len = val.len() as u32;
        let mut expected = vec![EncodingCodes::Vbin32 as u8];
        expected.append(&mut len.to_be_bytes().to_vec());
        expected.append(&mut val.to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);

        // u8 max + 1 length
        let val = ByteBuf::from(U8_MAX_BYTES_VALUE);
        let len = val.len() as u32;
        let mut expected = vec![EncodingCodes::Vbin32 as u8];
        expected.append(&mut len.to_be_bytes().to_vec());
        expected.append(&mut val.to_vec());
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_none() {
        let val: Option<()> = None;
        let expected = vec![EncodingCodes::Null as u8];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_some() {
        let val = Some(1i32);
        let expected = super::to_vec(&1i32).unwrap();
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_unit() {
        let expected = vec![EncodingCodes::Null as u8];
        assert_eq_on_serialized_vs_expected((), &expected);
    }

    #[test]
    fn test_serialize_vec_as_array() {
        let val = Array::from(vec![1, 2, 3, 4]);
        let expected = vec![
            EncodingCodes::Array8 as u8, // array8
            (2 + 4 * 4) as u8,           // length including `count` and element constructor
            4,                           // count
            EncodingCodes::Int as u8,
            0,
            0,
            0,
            1, // first element as i32
            0,
            0,
            0,
            2, // second element
            0,
            0,
            0,
            3, // third
            0,
            0,
            0,
            4, // fourth
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialize_slice_as_array() {
        let val = &[1, 2, 3, 4];
        let val = Array::from(val.to_vec());
        let expected = vec![
            EncodingCodes::Array8 as u8, // array8
            (2 + 4 * 4) as u8,           // length including `count` and element constructor
            4,                           // count
            EncodingCodes::Int as u8,
            0,
            0,
            0,
            1, // first element as i32
            0,
            0,
            0,
            2, // second element
            0,
            0,
            0,
            3, // third
            0,
            0,
            0,
            4, // fourth
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialzie_list() {
        // List0
        let val: Vec<i32> = vec![];
        let expected = vec![EncodingCodes::List0 as u8];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // List8
        let val = vec![1, 2, 3, 4];
        let expected = vec![
            EncodingCodes::List8 as u8,
            (1 + 2 * 4) as u8, // length including one byte on count
            4,                 // count
            EncodingCodes::SmallInt as u8,
            1,
            EncodingCodes::SmallInt as u8,
            2,
            EncodingCodes::SmallInt as u8,
            3,
            EncodingCodes::SmallInt as u8,
            4,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);

        // List8 with 255 elements of small ints
        let val: Vec<i32> = (0..127).collect();
        let mut expected = vec![EncodingCodes::List8 as u8, 255, 127];
        for el in val.iter() {
            expected.push(EncodingCodes::SmallInt as u8);
            expected.push(*el as u8);
        }
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialize_empty_array() {
        let val: Array<i32> = Array::from(vec![]);
        let expected = vec![
            EncodingCodes::Array8 as u8,
            0x01, // length
            0x00, // count
                  // There is no element, and thus there is no element constructor
                  // The same behavior is observed in amqpnetlite
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialize_array() {
        let val: Array<u8> = (0..253).collect();
        let mut expected = vec![
            EncodingCodes::Array8 as u8,
            255,
            253,
            EncodingCodes::Ubyte as u8,
        ];
        expected.append(&mut (0..253).collect());
        assert_eq_on_serialized_vs_expected(val, &expected);

        let val: Array<u8> = (0..254).collect();
        let mut expected = vec![
            EncodingCodes::Array32 as u8,
            0,
            0,
            1,
            3,
            0,
            0,
            0,
            254,
            EncodingCodes::Ubyte as u8,
        ];
        expected.append(&mut (0..254).collect());
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialzie_slice_as_list() {
        // slice will call `serialize_tuple`
        let val = [1, 2, 3, 4];
        let expected = vec![
            EncodingCodes::List8 as u8,
            (1 + 2 * 4) as u8, // length including one byte on count
            4,                 // count
            EncodingCodes::SmallInt as u8,
            1,
            EncodingCodes::SmallInt as u8,
            2,
            EncodingCodes::SmallInt as u8,
            3,
            EncodingCodes::SmallInt as u8,
            4,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialize_map() {
        use std::collections::BTreeMap;

        // Map8
        let mut val = BTreeMap::new();
        val.insert("a", 1i32);
        val.insert("m", 2);
        val.insert("q", 3);
        val.insert("p", 4);

        // A BTreeMap will be serialized in the ascending order
        let expected = vec![
            EncodingCodes::Map8 as u8,
            1 + 4 * (3 + 2), // 1 for count, 4 kv pairs, 3 for "a", 2 for 1i32
            2 * 4,           // 4 kv pairs
            EncodingCodes::Str8 as u8,
            1,
            b'a', // fisrt key
            EncodingCodes::SmallInt as u8,
            1, // first value
            EncodingCodes::Str8 as u8,
            1,
            b'm',
            EncodingCodes::SmallInt as u8,
            2,
            EncodingCodes::Str8 as u8,
            1,
            b'p',
            EncodingCodes::SmallInt as u8,
            4,
            EncodingCodes::Str8 as u8,
            1,
            b'q',
            EncodingCodes::SmallInt as u8,
            3,
        ];

        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialize_symbol() {
        use crate::primitives::Symbol;
        let symbol = Symbol::from("amqp");
        let expected = vec![0xa3_u8, 0x04, 0x61, 0x6d, 0x71, 0x70];
        assert_eq_on_serialized_vs_expected(symbol, &expected);
    }

    #[test]
    fn test_serialize_descriptor_name() {
        // The descriptor name should just be serialized as a symbol
        let descriptor = Descriptor::Name(Symbol::from("amqp"));
        let expected = vec![0x00, 0xa3, 0x04, 0x61, 0x6d, 0x71, 0x70];
        assert_eq_on_serialized_vs_expected(descriptor, &expected);
    }

    #[test]
    fn test_serialize_descriptor_code() {
        let descriptor = Descriptor::Code(0xf2);
        let expected = vec![0x00, 0x53, 0xf2];
        assert_eq_on_serialized_vs_expected(descriptor, &expected);
    }

    use serde::{Deserialize, Serialize};

    #[derive(Serialize)]
    struct Foo {
        a_field: i32,
        b: bool,
    }

    #[test]
    fn test_serialize_non_described_struct() {
        let val = Foo {
            a_field: 13,
            b: true,
        };
        let expected = vec![
            EncodingCodes::List8 as u8,
            1 + 2 + 1, // 1 for count, 2 for i32, 1 for true
            2,         // count
            EncodingCodes::SmallInt as u8,
            13,
            EncodingCodes::BooleanTrue as u8,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[cfg(feature = "serde_amqp_derive")]
    #[test]
    fn test_serialize_described_macro() {
        use crate as serde_amqp;
        use crate::macros::SerializeComposite;

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x13", encoding = "list")]
        struct Foo {
            is_fool: bool,
            a: i32,
        }

        let foo = Foo {
            is_fool: true,
            a: 9,
        };
        let expected = vec![0x00, 0x53, 0x13, 0xc0, 0x04, 0x02, 0x41, 0x54, 0x09];
        assert_eq_on_serialized_vs_expected(foo, &expected);
    }

    #[cfg(feature = "serde_amqp_derive")]
    #[test]
    fn test_serialize_tuple_struct_with_composite_macro() {
        use crate as serde_amqp;
        use crate::macros::SerializeComposite;

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x13", encoding = "list")]
        struct Foo(bool, i32);

        let foo = Foo(true, 9);
        let expected = vec![0x00, 0x53, 0x13, 0xc0, 0x04, 0x02, 0x41, 0x54, 0x09];
        assert_eq_on_serialized_vs_expected(foo, &expected);
    }

    #[cfg(feature = "serde_amqp_derive")]
    #[test]
    fn test_serialize_unit_struct_with_composite_macro() {
        use crate as serde_amqp;
        use crate::macros::SerializeComposite;

        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            1,
            EncodingCodes::List0 as u8,
        ];

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x01", encoding = "list")]
        struct Foo1;

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x01", encoding = "list")]
        struct Foo2();

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x01", encoding = "list")]
        struct Foo3 {}

        let foo1 = Foo1;
        let buf1 = to_vec(&foo1).unwrap();
        assert_eq!(&buf1[..], &expected);

        let foo2 = Foo2();
        let buf2 = to_vec(&foo2).unwrap();
        assert_eq!(&buf2[..], &expected);

        let foo3 = Foo3 {};
        let buf3 = to_vec(&foo3).unwrap();
        assert_eq!(&buf3[..], &expected);
    }

    #[cfg(feature = "serde_amqp_derive")]
    #[test]
    fn test_serialize_composite_macro_wrapper() {
        use crate as serde_amqp;
        use crate::macros::SerializeComposite;
        use crate::primitives::Symbol;
        use std::collections::BTreeMap;

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x01", encoding = "basic")]
        struct Wrapper(BTreeMap<Symbol, i32>);

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x01", encoding = "basic")]
        struct Wrapper2 {
            map: BTreeMap<Symbol, i32>,
        }

        let mut map = BTreeMap::new();
        map.insert(Symbol::from("a"), 1);
        map.insert(Symbol::from("b"), 2);
        let wrapper = Wrapper(map.clone());
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            1,
            EncodingCodes::Map8 as u8,
            0x0b,
            4,
            EncodingCodes::Sym8 as u8,
            1,
            0x61, // "a"
            EncodingCodes::SmallInt as u8,
            1,
            EncodingCodes::Sym8 as u8,
            1,
            0x62, // "b"
            EncodingCodes::SmallInt as u8,
            2,
        ];
        assert_eq_on_serialized_vs_expected(wrapper, &expected);

        let wrapper2 = Wrapper2 { map };
        assert_eq_on_serialized_vs_expected(wrapper2, &expected);
    }

    #[cfg(feature = "serde_amqp_derive")]
    #[test]
    fn test_serialize_composite_with_optional_fields() {
        use crate as serde_amqp;
        use crate::macros::SerializeComposite;

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x13", encoding = "list")]
        struct Foo {
            is_fool: Option<bool>,
            a: Option<i32>,
        }

        let foo = Foo {
            is_fool: None,
            a: None,
        };
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List0 as u8,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);

        let foo = Foo {
            is_fool: Some(true),
            a: None,
        };
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List8 as u8,
            2,
            1,
            EncodingCodes::BooleanTrue as u8,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);

        let foo = Foo {
            is_fool: Some(true),
            a: Some(1),
        };
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List8 as u8,
            4,
            2,
            EncodingCodes::BooleanTrue as u8,
            EncodingCodes::SmallInt as u8,
            1,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);

        let foo = Foo {
            is_fool: None,
            a: Some(1),
        };
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List8 as u8,
            4,
            2,
            EncodingCodes::Null as u8,
            EncodingCodes::SmallInt as u8,
            1,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x13", encoding = "list")]
        struct Bar {
            is_fool: Option<bool>,
            mandatory: u32,
            a: Option<i32>,
        }
        let bar = Bar {
            is_fool: None,
            mandatory: 0x13,
            a: None,
        };
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List8 as u8,
            4,
            2,
            EncodingCodes::Null as u8,
            EncodingCodes::SmallUint as u8,
            0x13,
        ];
        assert_eq_on_serialized_vs_expected(bar, &expected);
    }

    #[cfg(feature = "serde_amqp_derive")]
    #[test]
    fn test_serialize_composite_tuple_with_optional_fields() {
        use crate as serde_amqp;
        use crate::macros::SerializeComposite;

        #[derive(Debug, SerializeComposite)]
        #[amqp_contract(code = "0x00:0x13", encoding = "list")]
        struct Foo(Option<bool>, Option<i32>);

        let foo = Foo(None, None);
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List0 as u8,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);

        let foo = Foo(Some(true), None);
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List8 as u8,
            2,
            1,
            EncodingCodes::BooleanTrue as u8,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);

        let foo = Foo(Some(true), Some(1));
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List8 as u8,
            4,
            2,
            EncodingCodes::BooleanTrue as u8,
            EncodingCodes::SmallInt as u8,
            1,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);

        let foo = Foo(None, Some(1));
        let expected = vec![
            EncodingCodes::DescribedType as u8,
            EncodingCodes::SmallUlong as u8,
            0x13,
            EncodingCodes::List8 as u8,
            4,
            2,
            EncodingCodes::Null as u8,
            EncodingCodes::SmallInt as u8,
            1,
        ];
        assert_eq_on_serialized_vs_expected(foo, &expected);
    }

    #[cfg(feature = "serde_amqp_derive")]
    #[test]
    fn test_basic_newtype_wrapper_over_custom_type() {
        use crate::macros::{DeserializeComposite, SerializeComposite};
        use crate::{self as serde_amqp, from_slice};
        use serde::{Deserialize, Serialize};

        #[derive(Debug, Serialize, Deserialize, PartialEq, PartialOrd)]
        struct Foo {
            a: i32,
        }

        #[derive(Debug, SerializeComposite, DeserializeComposite, PartialEq, PartialOrd)]
        #[amqp_contract(
            name = "test:basic-wrapper:*",
            code = "0x0000_0000:0x0000_0099",
            encoding = "basic"
        )]
        struct BasicWrapper<T>(pub T);

        let value = BasicWrapper(Foo { a: 9 });
        let expected = [0x0, 0x53, 0x99, 0xc0, 0x3, 0x1, 0x54, 0x9];

        let buf = to_vec(&value).unwrap();
        assert_eq!(buf, expected);

        let decoded: BasicWrapper<Foo> = from_slice(&expected[..]).unwrap();
        assert_eq!(decoded, value);
    }

    #[allow(dead_code, clippy::all)]
    #[derive(Serialize)]
    enum Enumeration {
        UnitVariant,
        NewTypeVariant(u32),
        TupleVariant(bool, u64, String),
        StructVariant { id: u32, is_true: bool },
    }

    #[test]
    fn test_serialize_unit_variant() {
        let val = Enumeration::UnitVariant;
        let expected = vec![EncodingCodes::Uint0 as u8];
        assert_eq_on_serialized_vs_expected(val, &expected)
    }

    #[test]
    fn test_serialize_newtype_variant() {
        let val = Enumeration::NewTypeVariant(13);
        let expected = vec![
            EncodingCodes::Map8 as u8,
            1 + 2 * 2, // len
            2,         // count
            EncodingCodes::SmallUint as u8,
            1,
            EncodingCodes::SmallUint as u8,
            13,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected)
    }

    #[test]
    fn test_serialize_tuple_variant() {
        let val = Enumeration::TupleVariant(true, 13, String::from("amqp"));
        let expected = vec![
            0xc1, 0x0f, 0x02, 0x52, 0x02, 0xc0, 0x0a, 0x03, 0x41, 0x53, 0x0d, 0xa1, 0x04, 0x61,
            0x6d, 0x71, 0x70,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected)
    }

    #[test]
    fn test_serialize_struct_variant() {
        let val = Enumeration::StructVariant {
            id: 13,
            is_true: true,
        };
        let expected = vec![
            0xc1, 0x09, 0x02, 0x52, 0x03, 0xc0, 0x04, 0x02, 0x52, 0x0d, 0x41,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serializing_dec32() {
        let d32 = Dec32::from([0; 4]);
        let expected = vec![EncodingCodes::Decimal32 as u8, 0, 0, 0, 0];
        assert_eq_on_serialized_vs_expected(d32, &expected);
    }

    #[test]
    fn test_serializing_dec64() {
        let d64 = Dec64::from([0; 8]);
        let expected = vec![EncodingCodes::Decimal64 as u8, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq_on_serialized_vs_expected(d64, &expected);
    }

    #[test]
    fn test_serializing_dec128() {
        let d128 = Dec128::from([0; 16]);
        let expected = vec![
            EncodingCodes::Decimal128 as u8,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        assert_eq_on_serialized_vs_expected(d128, &expected);
    }

    #[test]
    fn test_serialize_timestamp() {
        let val = Timestamp::from(0);
        let expected = vec![EncodingCodes::Timestamp as u8, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[test]
    fn test_serialize_uuid() {
        let val = Uuid::from([0; 16]);
        let expected = vec![
            EncodingCodes::Uuid as u8,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        assert_eq_on_serialized_vs_expected(val, &expected);
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    pub struct NewType<T>(T);

    #[derive(Debug, Serialize)]
    #[allow(dead_code)] // only used to check that the derive compiles
    pub struct AnotherNewType<T>(T);

    #[test]
    fn test_serialize_deserialize_vec_of_tuple() {
        let data = vec![(&NewType(NewType(1i32)), &false, "amqp")];
        let buf = to_vec(&data).unwrap();
        let deserialized: Vec<(NewType<NewType<i32>>, bool, String)> =
            crate::de::from_slice(&buf).unwrap();
        assert_eq!(
            deserialized,
            vec![(NewType(NewType(1i32)), false, "amqp".to_string())]
        );
    }
}
