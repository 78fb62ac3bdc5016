# Sourced by the benches that need TLS: throwaway_ca DIR writes DIR/ca.pem, a throw-away CA,
# and DIR/leaf.pem + DIR/leaf.key, a leaf it signed for localhost and 127.0.0.1, as the tests
# make them. Valid for two days; nothing is trusted system-wide.
throwaway_ca() {
  (
    cd "$1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
      -out ca.pem -days 2 -subj "/CN=hubload throw-away bench CA" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key \
      -out leaf.csr -subj /CN=localhost 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >leaf.ext
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem \
      -days 2 -extfile leaf.ext 2>/dev/null
  )
}
