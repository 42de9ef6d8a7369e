//! IP addresses and CIDR prefixes as Kubernetes' CEL `library.IP` / `library.CIDR` parse
//! them (Go `net/netip`, without zones and IPv4-mapped IPv6 addresses).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `netip.ParseAddr` plus the Kubernetes restrictions.
pub(crate) fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    if raw.contains('%') {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    let addr: IpAddr = raw.parse().map_err(|_| {
        format!("IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): unable to parse IP")
    })?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

/// `netip.ParsePrefix` plus the Kubernetes restrictions: the address as written and the
/// prefix length.
pub(crate) fn parse_cidr(raw: &str) -> Result<(IpAddr, u8), String> {
    let Some((addr, bits)) = raw.split_once('/') else {
        return Err(format!("netip.ParsePrefix({raw:?}): no '/'"));
    };
    if addr.contains('%') {
        return Err(format!(
            "netip.ParsePrefix({raw:?}): IPv6 zones cannot be present in a prefix"
        ));
    }
    let ip: IpAddr = addr.parse().map_err(|_| {
        format!("netip.ParsePrefix({raw:?}): ParseAddr({addr:?}): unable to parse IP")
    })?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let valid_digits = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && !(bits.len() > 1 && bits.starts_with('0'));
    let bits: u8 = match bits.parse::<u16>() {
        Ok(b) if valid_digits && b <= max => b as u8,
        _ => {
            return Err(format!(
                "netip.ParsePrefix({raw:?}): bad bits after slash: {bits:?}"
            ));
        }
    };
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok((ip, bits))
}

/// The address with host bits cleared.
pub(crate) fn mask(ip: &IpAddr, bits: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits as u32)
            };
            IpAddr::V4(Ipv4Addr::from(u32::from(*v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits as u32)
            };
            IpAddr::V6(Ipv6Addr::from(u128::from(*v6) & m))
        }
    }
}

/// Whether `ip` lies in `net/bits` (same family only, as `netip.Prefix.Contains`).
pub(crate) fn contains(net: &IpAddr, bits: u8, ip: &IpAddr) -> bool {
    if net.is_ipv4() != ip.is_ipv4() {
        return false;
    }
    mask(net, bits) == mask(ip, bits)
}

pub(crate) fn is_link_local_multicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            o[0] == 224 && o[1] == 0 && o[2] == 0
        }
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

pub(crate) fn is_link_local_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            o[0] == 169 && o[1] == 254
        }
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_multicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(v6) => v6.segments()[0] & 0xff00 == 0xff00,
    }
}

/// Go's `netip.Addr.IsGlobalUnicast` (private and ULA addresses count as global).
pub(crate) fn is_global_unicast(ip: &IpAddr) -> bool {
    if let IpAddr::V4(v4) = ip
        && (v4.is_unspecified() || v4.is_broadcast())
    {
        return false;
    }
    !ip.is_unspecified() && !ip.is_loopback() && !is_multicast(ip) && !is_link_local_unicast(ip)
}
